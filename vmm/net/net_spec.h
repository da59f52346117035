/* `--net user[,mac=52:54:00:..][,restrict=on|off][,host=on|off][,hostfwd=RULE]...`: user-mode
 * networking as QEMU spells it (QEMU's documentation, "-netdev user":
 * hostfwd=[tcp|udp]:[hostaddr]:hostport-[guestaddr]: guestport; restrict=on isolates the guest: it
 * reaches nothing outside but what is forwarded), with hvprof's safer defaults: the guest does
 * not reach the host's own addresses unless host=on (frame_filter.h), and a forwarded port
 * binds the host's loopback, 127.0.0.1, unless a host address is given (QEMU binds every
 * address). Parsed apart from everything else so that it is tested and fuzzed on its own. */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define NET_MAX_HOSTFWD 16

/* slirp's defaults, as QEMU's: the network 10.0.2.0/24, the gateway (the host) 10.0.2.2, DNS
 * 10.0.2.3, and the first address it hands out by DHCP 10.0.2.15. */
#define NET_GUEST_ADDR "10.0.2.15"

struct net_hostfwd {
    bool udp;
    struct in_addr host; /* 127.0.0.1 when not given (QEMU: 0.0.0.0, every address) */
    uint16_t host_port;
    struct in_addr guest; /* NET_GUEST_ADDR when not given */
    uint16_t guest_port;
};

struct net_config {
    bool enabled;
    bool has_mac;
    uint8_t mac[6]; /* mac=: the card's address (a libvirt domain's own); else 52:54:00:12:34:56 */
    bool restrict_outside; /* restrict=on: the guest reaches only the forwarded ports (QEMU's) */
    bool host_open;        /* host=on: the guest may reach the host's own addresses */
    struct net_hostfwd fwd[NET_MAX_HOSTFWD];
    unsigned nfwd;
};

/* Parse one --net value into *c (which starts zeroed). -1 with a message naming the part. */
int net_spec_parse(const char *spec, struct net_config *c, struct hv_err *err);

/* "tcp 127.0.0.1:8080 -> 10.0.2.15:80", for the summary. */
void net_hostfwd_describe(const struct net_hostfwd *f, char *out, size_t len);

/* "52:54:00:12:34:56" into mac: false unless six two-digit hex bytes, unicast. */
bool net_mac_parse(const char *s, uint8_t mac[6]);
