/* guestwalk benchmark (not a test): ns per translation (cached / uncached), ns per frame, and the
 * cost of 8-, 32- and 128-frame user-stack walks as the sampler does them (gw_walker_begin, which
 * empties the translation cache, then gw_unwind with leaf classification).
 *
 *   bench_guestwalk [batches]      (default 201)
 *
 * Each figure is the median over `batches` of (time of a batch / operations in the batch),
 * CLOCK_MONOTONIC. "cold" rows also evict the CPU caches (32 MiB sweep, not timed) before every
 * single walk, which is then timed alone (clock read overhead included, printed separately). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "bench/cfi_bench.h"
#include "guestwalk/tests/guest_image.h"
#include "guestwalk/unwind.h"

#define CODE_VA   0x400000ull
#define STACK_VA  0x7ffe00000000ull
#define STACK_LEN (1ull << 20)
#define FRAME_GAP 96 /* bytes per frame: a typical small C frame */
#define EVICT_LEN (32u << 20)

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[n / 2];
}

struct bench {
    struct gimg g;
    struct gw_walker w;
    uint64_t stack_of[3]; /* rbp of the 8-, 32- and 128-frame chains */
    uint8_t *evict;
    unsigned batches;
    volatile uint64_t sink;
};

static const unsigned depths[3] = {8, 32, 128};

static int build(struct bench *b)
{
    struct gimg *g = &b->g;
    if (gimg_init(g, false) != 0 || gimg_map_fresh(g, CODE_VA, 4096, GIMG_P | GIMG_US) != 0 ||
        gimg_map_fresh(g, STACK_VA, STACK_LEN, GIMG_USER_RW | GIMG_XD) != 0)
        return -1;
    /* Code: `mov eax, [rbx]`-like body bytes, so the leaf check decodes a real instruction that
     * matches no case (the common one). */
    uint8_t code[4096];
    for (unsigned i = 0; i + 2 < sizeof(code); i += 2) {
        code[i] = 0x8b;
        code[i + 1] = 0x03;
    }
    code[0x800] = 0x55; /* push rbp: the leaf-repair entry case, decoded by capstone */
    gimg_write(g, CODE_VA, code, sizeof(code));
    static uint64_t ret[128];
    for (unsigned i = 0; i < 128; i++)
        ret[i] = CODE_VA + 0x40 + 2 * i;
    for (unsigned d = 0; d < 3; d++) {
        /* depth N = pc[0] + N-1 return addresses: N-1 records, separate 256 KiB regions. */
        uint64_t fp0 = STACK_VA + d * (256u << 10) + 0x200;
        if (gimg_write_chain(g, fp0, depths[d] - 1, FRAME_GAP, ret) != 0)
            return -1;
        b->stack_of[d] = fp0;
    }
    b->evict = malloc(EVICT_LEN);
    if (!b->evict)
        return -1;
    memset(b->evict, 1, EVICT_LEN);
    return gw_walker_init(&b->w, &g->mem, NULL, NULL);
}

static void evict_caches(struct bench *b)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < EVICT_LEN; i += 64) {
        b->evict[i]++;
        s += b->evict[i];
    }
    b->sink += s;
}

static struct gw_snapshot cpu_for(struct bench *b, unsigned d)
{
    uint64_t fp0 = b->stack_of[d];
    return gimg_cpu(&b->g, CODE_VA + 0x10, fp0 - 0x40, fp0, 3);
}

/* One sampler-style walk: begin (cache flush, MMU mode) + unwind. */
static unsigned walk_once(struct bench *b, const struct gw_snapshot *c, uint64_t *pcs)
{
    struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
    gw_walker_begin(&b->w, c);
    return gw_unwind(&b->w, &st);
}

static double bench_walk_warm(struct bench *b, unsigned d, bool at_push)
{
    enum { PER_BATCH = 200 };
    double *v = calloc(b->batches, sizeof(double));
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_snapshot c = cpu_for(b, d);
    if (at_push) {
        c.rip = CODE_VA + 0x800;
        gimg_write_u64(&b->g, c.rsp, CODE_VA + 0x20); /* the return address at [rsp] */
    }
    if (walk_once(b, &c, pcs) != depths[d] + at_push) {
        fprintf(stderr, "bench: walk of depth %u returned a different depth\n", depths[d]);
        exit(1);
    }
    for (unsigned i = 0; i < b->batches; i++) {
        uint64_t t0 = now_ns();
        for (unsigned k = 0; k < PER_BATCH; k++)
            b->sink += walk_once(b, &c, pcs);
        v[i] = (double)(now_ns() - t0) / PER_BATCH;
    }
    double m = median(v, b->batches);
    free(v);
    return m;
}

/* The frameless scan's worst case: walks at PCs the walker has mostly not seen (1984 distinct
 * PCs against its 1024-entry shape cache), in code with no `ret` within the scan's budget. */
static double bench_walk_unseen(struct bench *b, unsigned d)
{
    enum { PER_BATCH = 200, PCS = 1984 }; /* even offsets in [0x40, 0xfc0) */
    double *v = calloc(b->batches, sizeof(double));
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_snapshot c = cpu_for(b, d);
    unsigned next = 0;
    for (unsigned i = 0; i < b->batches; i++) {
        uint64_t t0 = now_ns();
        for (unsigned k = 0; k < PER_BATCH; k++) {
            c.rip = CODE_VA + 0x40 + 2 * (next++ % PCS);
            b->sink += walk_once(b, &c, pcs);
        }
        v[i] = (double)(now_ns() - t0) / PER_BATCH;
    }
    double m = median(v, b->batches);
    free(v);
    return m;
}

static double clock_overhead(struct bench *b)
{
    double *v = calloc(b->batches, sizeof(double));
    for (unsigned i = 0; i < b->batches; i++) {
        uint64_t t0 = now_ns();
        uint64_t t1 = now_ns();
        v[i] = (double)(t1 - t0);
    }
    double m = median(v, b->batches);
    free(v);
    return m;
}

static double bench_walk_cold(struct bench *b, unsigned d)
{
    double *v = calloc(b->batches, sizeof(double));
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_snapshot c = cpu_for(b, d);
    for (unsigned i = 0; i < b->batches; i++) {
        evict_caches(b);
        uint64_t t0 = now_ns();
        b->sink += walk_once(b, &c, pcs);
        v[i] = (double)(now_ns() - t0);
    }
    double m = median(v, b->batches);
    free(v);
    return m;
}

/* Uncached: a full page-table walk (pt_translate). Cached: gw_translate hitting the cache. */
static void bench_translate(struct bench *b, double *uncached, double *cached)
{
    enum { PER_BATCH = 2000 };
    double *v = calloc(b->batches, sizeof(double)), *w = calloc(b->batches, sizeof(double));
    struct gw_snapshot c = cpu_for(b, 0);
    gw_walker_begin(&b->w, &c);
    uint64_t gpa;
    for (unsigned i = 0; i < b->batches; i++) {
        uint64_t t0 = now_ns();
        for (unsigned k = 0; k < PER_BATCH; k++) {
            struct pt_xlate x;
            uint64_t va = STACK_VA + ((k * 4096ull) & (STACK_LEN - 1));
            pt_translate(&b->w.mmu, b->w.mem, va, PT_ACC_USER, &x, NULL);
            b->sink += x.gpa;
        }
        v[i] = (double)(now_ns() - t0) / PER_BATCH;
        t0 = now_ns();
        for (unsigned k = 0; k < PER_BATCH; k++) {
            gw_translate(&b->w, STACK_VA + (k & 7) * 4096ull, true, &gpa, NULL);
            b->sink += gpa;
        }
        w[i] = (double)(now_ns() - t0) / PER_BATCH;
    }
    *uncached = median(v, b->batches);
    *cached = median(w, b->batches);
    free(v);
    free(w);
}

int main(int argc, char **argv)
{
    static struct bench b;
    b.batches = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 201;
    if (b.batches == 0)
        b.batches = 1;
    if (build(&b) != 0) {
        fprintf(stderr, "bench: cannot build the guest image\n");
        return 1;
    }
    double unc, cac;
    bench_translate(&b, &unc, &cac);
    printf("translation, uncached (4-level page walk)  %8.1f ns\n", unc);
    printf("translation, cached (gw_translate hit)     %8.1f ns\n", cac);

    double warm[3], cold[3];
    for (unsigned d = 0; d < 3; d++)
        warm[d] = bench_walk_warm(&b, d, false);
    double at_push = bench_walk_warm(&b, 1, true);
    double clk = clock_overhead(&b);
    for (unsigned d = 0; d < 3; d++)
        cold[d] = bench_walk_cold(&b, d);
    printf("per frame (128-frame walk - 8-frame walk)  %8.1f ns\n",
           (warm[2] - warm[0]) / (depths[2] - depths[0]));
    printf("walk (begin + unwind), translation cache cold, CPU caches warm:\n");
    for (unsigned d = 0; d < 3; d++)
        printf("  %3u frames                               %8.1f ns\n", depths[d], warm[d]);
    printf("   32 frames, RIP at push rbp (capstone)   %8.1f ns\n", at_push);
    printf("   32 frames, RIP never seen, no ret in 48 instructions (frameless scan) %8.1f ns\n",
           bench_walk_unseen(&b, 1));
    printf("walk, translation cache cold, CPU caches evicted (single walk timed, clock %.0f ns):\n",
           clk);
    for (unsigned d = 0; d < 3; d++)
        printf("  %3u frames                               %8.1f ns\n", depths[d], cold[d]);
    b.w.cfg.no_leaf_repair = true;
    for (unsigned d = 0; d < 3; d++)
        cold[d] = bench_walk_cold(&b, d);
    printf("same, leaf repair off (no capstone decode):\n");
    for (unsigned d = 0; d < 3; d++)
        printf("  %3u frames                               %8.1f ns\n", depths[d], cold[d]);
    gw_walker_fini(&b.w);
    gimg_free(&b.g);
    free(b.evict);
    cfi_bench(b.batches);
    return 0;
}
