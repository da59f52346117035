/* User-mode networking through libslirp (Debian's libslirp-dev, QEMU's own user network): the
 * guest's frames go into slirp's TCP/IP stack, which opens ordinary sockets on the host as the
 * unprivileged hvprof process; slirp's frames come back to the guest. The guest sees QEMU's
 * `-netdev user` network (net_spec.h: 10.0.2.0/24, gateway 10.0.2.2, DHCP, DNS relay) and host
 * ports forwarded into it. libslirp is not thread-safe: every call into it is made under one
 * lock, by the network's own thread (its sockets and timers) or by the guest's transmitting
 * thread (user_net_input). Frames from the guest are untrusted: slirp parses them (it is QEMU's
 * user network's parser), hvprof only bounds their length. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/net/net_spec.h"

struct user_net;

struct user_net_ops {
    /* A frame for the guest (from under the network's lock). */
    void (*to_guest)(void *ctx, const uint8_t *frame, size_t len);
    /* The guest made receive buffers available (user_net_wake asked): deliver what waits. */
    void (*flush)(void *ctx);
    void *ctx;
};

/* The network of c with its forwarded ports bound (an error names a port that cannot be). */
int user_net_open(struct user_net **out, const struct net_config *c, const struct user_net_ops *ops,
                  struct hv_err *err);
/* Its thread: sockets, timers, and flushes asked for by user_net_wake. */
int user_net_start(struct user_net *u, struct hv_err *err);
/* A frame from the guest. */
void user_net_input(struct user_net *u, const uint8_t *frame, size_t len);
/* Ask the thread to call ops->flush (safe from any lock: it only writes an eventfd). */
void user_net_wake(struct user_net *u);
void user_net_stop(struct user_net *u);
void user_net_close(struct user_net *u);

/* IPv4 fragments from the guest, not given to slirp (frame_filter.h), for the summary. */
uint64_t user_net_fragments_dropped(const struct user_net *u);
/* Packets to the host's own addresses, not given to slirp (host=off; frame_filter.h). */
uint64_t user_net_host_dropped(const struct user_net *u);
/* What slirp reported as the guest's errors (malformed frames), for the summary. */
uint64_t user_net_guest_errors(const struct user_net *u);
