/* libFuzzer: images found through their files (guestos/generic/file_modules.h) with a hostile
 * guest kernel's answers. The input is [u64 index the kernel claims for the mapped page]
 * [u64 where in the file the mapped page's bytes come from, in pages] [the file's bytes]: one
 * executable page is mapped at 0x7f0000010000 holding that file page, the OS layer says it
 * caches page `index` of the file, and serves the file's pages as the page cache. The seeds
 * are this machine's /usr/bin/true with its first code page mapped and named rightly. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/generic/file_modules.h"
#include "guestos/generic/generic.h"
#include "guestos/generic/user_modules.h"
#include "guestwalk/tests/guest_image.h"

#define VA          0x7f0000010000ull
#define MAX_FILE    (1u << 20)
#define HEADER_SIZE 16

struct fake {
    const uint8_t *file;
    size_t len;
    uint64_t index;
};

static bool page_file(struct guestos *os, const struct gmem *mem, const struct guestos_as *as,
                      uint64_t va, struct guestos_file *out)
{
    (void)mem;
    (void)as;
    const struct fake *f = os->priv;
    if ((va & ~4095ull) != VA)
        return false;
    *out = (struct guestos_file){.ino = 1, .size = f->len, .index = f->index, .handle = 1};
    return true;
}

static int file_page(struct guestos *os, const struct gmem *mem, const struct guestos_file *gf,
                     uint64_t index, void *dst)
{
    (void)mem;
    (void)gf;
    const struct fake *f = os->priv;
    if (index >= (f->len + 4095) / 4096)
        return 0;
    size_t n = f->len - index * 4096 < 4096 ? f->len - index * 4096 : 4096;
    memset(dst, 0, 4096);
    memcpy(dst, f->file + index * 4096, n);
    return 1;
}

static const struct guestos_ops ops = {
    .name = "fuzz", .user_page_file = page_file, .file_page = file_page};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEADER_SIZE || size - HEADER_SIZE > MAX_FILE)
        return 0;
    struct fake f = {data + HEADER_SIZE, size - HEADER_SIZE, 0};
    uint64_t from;
    memcpy(&f.index, data, 8);
    memcpy(&from, data + 8, 8);
    /* One address space for all runs (24 MiB of guest RAM): only the page's bytes change. */
    static struct gimg g;
    static bool ready;
    if (!ready) {
        if (gimg_init(&g, false) < 0 || gimg_map_fresh(&g, VA, 4096, GIMG_USER_RW) < 0)
            abort();
        ready = true;
    }
    uint8_t page[4096] = {0};
    if (from < (f.len + 4095) / 4096) {
        size_t n = f.len - from * 4096 < 4096 ? f.len - from * 4096 : 4096;
        memcpy(page, f.file + from * 4096, n);
    }
    if (gimg_write(&g, VA, page, 4096) < 0)
        abort();
    struct gw_snapshot cpu = gimg_cpu(&g, VA, 0x7ffff000, 0, 3);
    struct guestos_as as = {
        .cr0 = cpu.cr0, .root = cpu.cr3, .cr4 = cpu.cr4, .efer = cpu.efer, .pid = 2};
    struct guestos os = {.ops = &ops, .priv = &f};
    static struct discover_range r[DISCOVER_GUEST_MAX_RANGES];
    struct discover_module out[4];
    size_t nr, n = guestos_generic_discover_in(&g.mem, &as, r, &nr, out, 4);
    guestos_file_modules(&os, &g.mem, &as, r, nr, out, n, 4);
    return 0;
}
