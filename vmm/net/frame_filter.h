/* Frames from the guest that are not given to libslirp (docs/net.md, docs/security.md):
 *
 *   - IPv4 fragments. Debian 12's libslirp 4.7.0 reads a pointer out of the packet's own bytes
 *     when it reassembles a crafted IPv4 fragment: one frame from a hostile guest (a lone last
 *     fragment of a UDP datagram, found by virtio_net_fuzz within a minute) crashes the
 *     process. A guest on this 1500-byte-MTU link fragments only UDP datagrams larger than
 *     1472 bytes; TCP segments fit the MTU (no segmentation offload is offered).
 *   - Packets to the host itself, unless the user opens it (--net user,host=on). slirp opens
 *     an ordinary socket on the host for whatever address the guest names, so a guest that
 *     names 127.0.0.1, 0.0.0.0 (Linux connects that to the host's loopback) or one of the
 *     host's own interface addresses reaches every service listening on the host: a database
 *     on localhost, a metadata service, another VM's console. The virtual network's own
 *     aliases (the gateway 10.0.2.2 is the host's loopback in slirp) are closed by slirp's
 *     disable_host_loopback; this closes the direct names. The DNS relay (10.0.2.3) stays.
 *
 * The host's addresses are read once when the network is made (getifaddrs); an address the
 * host gains later is not known (docs/security.md says so). */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_FILTER_MAX_HOST 64

enum net_verdict {
    NET_PASS = 0,
    NET_DROP_FRAGMENT, /* an IPv4 fragment */
    NET_DROP_HOST,     /* to the host's own addresses, with host=off */
};

struct net_filter {
    bool host_open; /* host=on: the guest may reach the host's own addresses */
    struct in_addr host[NET_FILTER_MAX_HOST];
    unsigned nhost;
};

/* The host's IPv4 interface addresses into f (best effort: none when they cannot be read). */
void net_filter_init(struct net_filter *f, bool host_open);

/* What to do with frame `fr` from the guest (with or without one 802.1Q VLAN tag). */
enum net_verdict net_frame_verdict(const struct net_filter *f, const uint8_t *fr, size_t len);

/* The fragment rule alone (NET_PASS or NET_DROP_FRAGMENT), as before host addresses existed. */
static inline bool net_frame_allowed(const uint8_t *fr, size_t len)
{
    struct net_filter open = {.host_open = true};
    return net_frame_verdict(&open, fr, len) == NET_PASS;
}
