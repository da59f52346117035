#include "tests/tools/capture/exe_files.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "guestos/linux/kread.h"
#include "guestos/linux/pagecache.h"
#include "guestos/linux/process.h"

/* Executables read at most (busybox is 2 MiB). */
#define EXE_MAX_SIZE (64ull << 20)

struct walk {
    const struct lx_kernel *k;
    struct lx_kread *kr;
    const struct lx_file_layout *fl;
    uint64_t exe_file;
    struct exe_file *out;
    int n;
};

static int each_task(void *ctx, uint64_t task)
{
    struct walk *w = ctx;
    uint64_t mm = 0, mapping;
    if (!lx_kread(w->kr, task + w->k->task.mm, &mm, 8) || !mm ||
        !lx_exe_mapping(w->kr, w->fl, w->exe_file, mm, &mapping))
        return 0;
    for (int i = 0; i < w->n; i++)
        if (w->out[i].mapping == mapping)
            return 0;
    w->out[w->n++] = (struct exe_file){.mapping = mapping};
    return w->n >= EXE_FILES_MAX;
}

int exe_files_read(struct lx_kernel *k, const struct gmem *mem, struct exe_file *out, char *why,
                   size_t why_len)
{
    struct lx_kread kr;
    struct lx_proc_layout pl;
    struct lx_file_layout fl;
    struct lx_cache_layout cl;
    uint64_t vmemmap;
    if (lx_kread_init_kernel(&kr, k, mem, why, why_len) < 0 ||
        !lx_proc_layout_of(k, &pl, why, why_len) || !lx_file_layout_of(k, &fl, why, why_len) ||
        !lx_cache_layout_of(k, &cl, why, why_len))
        return -1;
    if (!lx_kread(&kr, k->sym.vmemmap_base, &vmemmap, 8)) {
        snprintf(why, why_len, "vmemmap_base cannot be read");
        return -1;
    }
    struct walk w = {.k = k, .kr = &kr, .fl = &fl, .exe_file = pl.exe_file, .out = out};
    lx_tasks_each(&kr, &pl, k->sym.init_task, each_task, &w);
    static uint8_t page[4096];
    for (int i = 0; i < w.n; i++) {
        struct exe_file *e = &out[i];
        struct lx_page_file f;
        if (!lx_mapping_file(&kr, &fl, e->mapping, &f))
            continue;
        e->ino = f.ino;
        e->size = f.size;
        e->pages = f.size > EXE_MAX_SIZE ? 0 : (f.size + 4095) / 4096;
        uLong crc = crc32(0, NULL, 0);
        for (uint64_t p = 0; p < e->pages; p++) {
            enum lx_cache_page r = lx_cache_read(&kr, &cl, &fl, vmemmap, e->mapping, p, page);
            e->cached += r == LX_CACHE_CACHED;
            e->holes += r == LX_CACHE_HOLE;
            e->bad += r == LX_CACHE_BAD;
            uint64_t len = f.size - p * 4096 < 4096 ? f.size - p * 4096 : 4096;
            if (r == LX_CACHE_CACHED)
                crc = crc32(crc, page, (uInt)len);
        }
        e->crc32 = e->cached == e->pages ? (uint32_t)crc : 0;
    }
    return w.n;
}
