#include "guestos/generic/link_map.h"

#include <string.h>

#define R_VERSION_MAX 16 /* 1 since SVR4; glibc 2.35 made it 2 (r_debug_extended) */
#define RT_CONSISTENT 0

static bool user_pointer(uint64_t p)
{
    return p && (p >> 47) == 0 && (p & 7) == 0;
}

/* l_name: at most sizeof(out) - 1 printable bytes; "" when unreadable. */
static void read_name(discover_read_fn read, void *ctx, uint64_t va, char *out, size_t len)
{
    out[0] = 0;
    if (!va || (va >> 47))
        return;
    size_t got = 0;
    while (got + 1 < len) {
        size_t chunk = 4096 - ((va + got) & 4095);
        if (chunk > len - 1 - got)
            chunk = len - 1 - got;
        if (!read(ctx, va + got, out + got, chunk))
            break;
        char *nul = memchr(out + got, 0, chunk);
        if (nul) {
            got = (size_t)(nul - out);
            break;
        }
        got += chunk;
    }
    out[got < len ? got : len - 1] = 0;
    if (got + 1 >= len) { /* no end within the bound: not a name we can use */
        out[0] = 0;
        return;
    }
    for (size_t i = 0; i < got; i++) {
        if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f) {
            out[0] = 0;
            return;
        }
    }
}

int link_map_read(discover_read_fn read, void *ctx, uint64_t r_debug, struct link_map_entry *out,
                  size_t max, bool *consistent)
{
    *consistent = false;
    uint64_t rd[5];
    if (!user_pointer(r_debug) || !read(ctx, r_debug, rd, sizeof(rd)))
        return -1;
    uint32_t version = (uint32_t)rd[0], state = (uint32_t)rd[3];
    if (version == 0 || version > R_VERSION_MAX)
        return -1;
    *consistent = state == RT_CONSISTENT;
    uint64_t prev = 0, at = rd[1];
    size_t n = 0;
    for (unsigned steps = 0; at && steps < LINK_MAP_MAX && n < max; steps++) {
        uint64_t lm[5];
        if (!user_pointer(at) || !read(ctx, at, lm, sizeof(lm)) || lm[4] != prev)
            break; /* a broken link ends the list: keep what was read */
        struct link_map_entry *e = &out[n++];
        e->addr = lm[0];
        e->ld = lm[2];
        read_name(read, ctx, lm[1], e->name, sizeof(e->name));
        prev = at;
        at = lm[3];
    }
    return (int)n;
}
