/* The boot archive: cpio "newc" (magic "070701", 13 eight-digit hex fields, the name, padding
 * to 4 bytes, the data, padding to 4; ends at "TRAILER!!!"). Bounded by the archive's size. */
#include "kernel.h"

static const u8 *arc;
static u64 arc_size;

void archive_init(const void *base, u64 size)
{
    arc = base;
    arc_size = size;
}

static bool hex8(const u8 *p, u32 *out)
{
    u32 v = 0;
    for (int i = 0; i < 8; i++) {
        u8 c = p[i];
        u32 d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        v = v << 4 | d;
    }
    *out = v;
    return true;
}

const void *archive_find(const char *name, u64 *size)
{
    u64 off = 0;
    size_t want = strlen(name);
    while (arc && off + 110 <= arc_size) {
        const u8 *h = arc + off;
        u32 filesize, namesize;
        if (memcmp(h, "070701", 6) || !hex8(h + 54, &filesize) || !hex8(h + 94, &namesize))
            return NULL;
        u64 name_off = off + 110;
        if (namesize == 0 || name_off + namesize > arc_size)
            return NULL;
        u64 data_off = (name_off + namesize + 3) & ~3ull;
        if (data_off + filesize > arc_size)
            return NULL;
        const char *n = (const char *)arc + name_off;
        if (namesize == 11 && !memcmp(n, "TRAILER!!!", 11))
            return NULL;
        if (namesize == want + 1 && !memcmp(n, name, want) && n[want] == '\0') {
            *size = filesize;
            return arc + data_off;
        }
        off = (data_off + filesize + 3) & ~3ull;
    }
    return NULL;
}
