/* Frames from the guest kept from slirp: IPv4 fragments, and packets to the host itself
 * (frame_filter.h says why). */
#include "vmm/net/frame_filter.h"

#include <ifaddrs.h>
#include <string.h>
#include <sys/socket.h>

void net_filter_init(struct net_filter *f, bool host_open)
{
    memset(f, 0, sizeof(*f));
    f->host_open = host_open;
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) < 0)
        return;
    for (struct ifaddrs *a = all; a && f->nhost < NET_FILTER_MAX_HOST; a = a->ifa_next)
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET)
            f->host[f->nhost++] = ((const struct sockaddr_in *)(const void *)a->ifa_addr)->sin_addr;
    freeifaddrs(all);
}

/* 127.0.0.0/8 (RFC 1122 3.2.1.3: loopback) and 0.0.0.0/8 ("this host on this network"). */
static bool loopback_or_this_host(uint32_t a)
{
    return (a >> 24) == 127 || (a >> 24) == 0;
}

enum net_verdict net_frame_verdict(const struct net_filter *f, const uint8_t *fr, size_t len)
{
    size_t at = 12; /* the EtherType, after the two MAC addresses */
    if (len < at + 2)
        return NET_PASS; /* too short to be anything: slirp drops it */
    unsigned type = (unsigned)fr[at] << 8 | fr[at + 1];
    if (type == 0x8100) { /* IEEE 802.1Q: the tag, then the real type */
        at += 4;
        if (len < at + 2)
            return NET_PASS;
        type = (unsigned)fr[at] << 8 | fr[at + 1];
    }
    if (type != 0x0800)
        return NET_PASS; /* ARP (slirp answers it itself); IPv6 is not enabled in slirp */
    at += 2; /* the IPv4 header (RFC 791 3.1): flags and fragment offset in bytes 6-7, the
              * destination address in bytes 16-19 */
    if (len < at + 8)
        return NET_PASS;
    unsigned frag = (unsigned)fr[at + 6] << 8 | fr[at + 7];
    if (frag & 0x3fff) /* MF (0x2000) set or an offset (13 bits) */
        return NET_DROP_FRAGMENT;
    if (f->host_open || len < at + 20)
        return NET_PASS;
    uint32_t dst = (uint32_t)fr[at + 16] << 24 | (uint32_t)fr[at + 17] << 16 |
                   (uint32_t)fr[at + 18] << 8 | fr[at + 19];
    if (loopback_or_this_host(dst))
        return NET_DROP_HOST;
    for (unsigned i = 0; i < f->nhost; i++)
        if (f->host[i].s_addr == htonl(dst))
            return NET_DROP_HOST;
    return NET_PASS;
}
