#include "vmm/net/frame_filter.h"

bool net_frame_allowed(const uint8_t *f, size_t len)
{
    size_t at = 12; /* the EtherType, after the two MAC addresses */
    if (len < at + 2)
        return true; /* too short to be anything: slirp drops it */
    unsigned type = (unsigned)f[at] << 8 | f[at + 1];
    if (type == 0x8100) { /* IEEE 802.1Q: the tag, then the real type */
        at += 4;
        if (len < at + 2)
            return true;
        type = (unsigned)f[at] << 8 | f[at + 1];
    }
    if (type != 0x0800)
        return true;
    at += 2; /* the IPv4 header: flags and fragment offset in bytes 6 and 7 (RFC 791 3.1) */
    if (len < at + 8)
        return true;
    unsigned frag = (unsigned)f[at + 6] << 8 | f[at + 7];
    return (frag & 0x3fff) == 0; /* MF (0x2000) clear and offset (13 bits) zero */
}
