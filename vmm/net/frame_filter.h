/* Frames from the guest that are not given to libslirp. Debian 12's libslirp 4.7.0 reads a
 * pointer out of the packet's own bytes when it reassembles a crafted IPv4 fragment: one frame
 * from a hostile guest (a lone last fragment of a UDP datagram, found by virtio_net_fuzz within
 * a minute) crashes the process. hvprof's network therefore carries no IPv4 fragments from the
 * guest: they are dropped and counted (docs/net.md). A guest on this 1500-byte-MTU link
 * fragments only UDP datagrams larger than 1472 bytes; TCP segments fit the MTU (no
 * segmentation offload is offered). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether frame f goes to slirp: false for an IPv4 fragment (RFC 791: the MF flag, or a
 * fragment offset other than 0), with or without one 802.1Q VLAN tag. */
bool net_frame_allowed(const uint8_t *f, size_t len);
