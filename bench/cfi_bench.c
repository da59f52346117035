/* The DWARF CFI part of bench_guestwalk (not a test): walks of this process's own stack, captured
 * as a guest's (guestwalk/tests/self_stack.h), whose frames are built -O2 -fomit-frame-pointer
 * (cfi_funcs.c) with glibc and the program's own code above them, so every frame is found
 * through .eh_frame tables, as a guest process's would be; a mixed stack with one frame-pointer
 * function in it; and the compilation of each loaded object's table (what the drain thread does
 * once per binary), with its host memory. */
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/cfi_bench.h"
#include "guestwalk/tests/cfi_funcs.h"
#include "guestwalk/tests/self_stack.h"

#define WANT_FRAMES 32

static struct self_stack cap;

static void leaf(void *arg)
{
    (void)arg;
    self_stack_capture(&cap);
}

/* Capture a stack of exactly WANT_FRAMES frames (as the CFI walk counts them), or close. */
static unsigned capture(const struct gw_cfi_map *map, struct gimg *g, struct gw_walker *w,
                        bool through_fp)
{
    unsigned got = 0;
    int recurse = 8;
    for (int attempt = 0; attempt < 3; attempt++) {
        self_stack_free(&cap);
        struct cfi_call c = {.leaf = leaf, .recurse = recurse, .through_fp = through_fp};
        cfi_a(&c, 0);
        gimg_free(g);
        if (gimg_init(g, false) != 0 || self_stack_map(&cap, g) != 0)
            return 0;
        w->mem = &g->mem;
        struct gw_snapshot s = gimg_cpu(g, cap.rip, cap.rsp, cap.rbp, 3);
        gw_walker_begin(w, &s);
        uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
        struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
        struct gw_regs r = gw_regs_of(&s);
        got = gw_cfi_unwind(map, w, &r, &st);
        if (got == WANT_FRAMES)
            break;
        recurse += WANT_FRAMES - (int)got;
        if (recurse < 0)
            recurse = 0;
    }
    return got;
}

static double time_walks(const struct gw_cfi_map *map, struct gw_walker *w, struct gimg *g,
                         unsigned batches, unsigned *frames, unsigned *from_cfi)
{
    enum { PER_BATCH = 200 };
    double *v = calloc(batches, sizeof(double));
    struct gw_snapshot s = gimg_cpu(g, cap.rip, cap.rsp, cap.rbp, 3);
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    volatile unsigned sink = 0;
    for (unsigned i = 0; i < batches; i++) {
        uint64_t t0 = now_ns();
        for (unsigned k = 0; k < PER_BATCH; k++) {
            /* As the sampler: begin (translation cache flushed), then the walk. */
            gw_walker_begin(w, &s);
            struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
            struct gw_regs r = gw_regs_of(&s);
            sink += gw_cfi_unwind(map, w, &r, &st);
            *frames = st.count;
            *from_cfi = st.cfi_frames;
        }
        v[i] = (double)(now_ns() - t0) / PER_BATCH;
    }
    qsort(v, batches, sizeof(*v), cmp_double);
    double m = v[batches / 2];
    free(v);
    (void)sink;
    return m;
}

struct compile_ctx {
    unsigned batches;
};

static int compile_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct compile_ctx *c = arg;
    const ElfW(Phdr) *eh = NULL, *seg = NULL;
    uint64_t lo = UINT64_MAX;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_GNU_EH_FRAME)
            eh = p;
        if (p->p_type == PT_LOAD && p->p_vaddr < lo)
            lo = p->p_vaddr;
    }
    for (unsigned i = 0; eh && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && eh->p_vaddr >= p->p_vaddr &&
            eh->p_vaddr < p->p_vaddr + p->p_memsz)
            seg = p;
    }
    const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "(this program)";
    if (!seg || !strstr(name, "libc.so"))
        return 0;
    struct cfi_src src = {
        .image_base = lo & ~0xfffull,
        .vaddr = seg->p_vaddr,
        .data = (const uint8_t *)(uintptr_t)(info->dlpi_addr + seg->p_vaddr),
        .len = seg->p_memsz,
    };
    unsigned runs = c->batches < 21 ? c->batches : 21;
    double *v = calloc(runs, sizeof(double));
    struct cfi_table t = {0};
    for (unsigned i = 0; i < runs; i++) {
        cfi_table_free(&t);
        uint64_t t0 = now_ns();
        if (cfi_compile(&src, eh->p_vaddr, 0, &t, NULL) != 0)
            break;
        v[i] = (double)(now_ns() - t0);
    }
    qsort(v, runs, sizeof(*v), cmp_double);
    printf("table of %s: %" PRIu64 " FDEs, %zu rows, %zu expressions, %.1f KiB host memory "
           "(%.1f bytes per FDE), compiled in %.2f ms (drain thread, once per binary)\n",
           name, t.stats.fdes, t.nrows, t.nexprs, (double)cfi_table_bytes(&t) / 1024,
           t.stats.fdes ? (double)cfi_table_bytes(&t) / (double)t.stats.fdes : 0,
           v[runs / 2] / 1e6);
    free(v);
    cfi_table_free(&t);
    return 0;
}

void cfi_bench(unsigned batches)
{
    struct gw_cfi_map *map = self_cfi_map();
    static struct gimg g;
    struct gw_walker w;
    if (!map || gimg_init(&g, false) != 0 || gw_walker_init(&w, &g.mem, NULL, NULL) != 0) {
        fprintf(stderr, "bench: cannot set up the CFI walk\n");
        return;
    }
    printf("DWARF CFI walks of this process's own stack (-O2 -fomit-frame-pointer frames, glibc; "
           "begin + unwind, translation cache cold):\n");
    for (int mixed = 0; mixed < 2; mixed++) {
        unsigned n = capture(map, &g, &w, mixed);
        unsigned frames = 0, from_cfi = 0;
        double ns = time_walks(map, &w, &g, batches, &frames, &from_cfi);
        printf("  %3u frames, %s %8.1f ns (%u callers from CFI)\n", n,
               mixed ? "mixed (one frame-pointer function)" : "every frame from .eh_frame   ", ns,
               from_cfi);
    }
    struct compile_ctx c = {batches};
    dl_iterate_phdr(compile_one, &c);
    self_stack_free(&cap);
    gw_walker_fini(&w);
    gimg_free(&g);
    self_cfi_map_free(map);
}
