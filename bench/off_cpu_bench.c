/* Off-CPU visits' cost (not a test): what `record --off-cpu` does on the drain thread at each
 * visit of the guest's threads (docs/off-cpu.md), on memory captured from real Debian guests
 * (guestos/tests/data: 5.10, 6.1 generic and cloud, 7.2; tests/linux/capture.sh), natively:
 *
 *   list     every thread's state, counters, identity (lx_threads_each), the part of a visit
 *            every thread pays each time;
 *   walk     a thread's registers (switch frame, pt_regs) and its kernel stack with the
 *            kernel's ORC tables, which a thread pays once per sleep (and the user walk, which
 *            is the exit path's and measured in bench_guestwalk);
 *
 * and from them the share of one host CPU that visits of a 200-thread guest take at the default
 * 50 visits a second: listing 200 threads each time, and walking the stacks of those that slept
 * again since the last visit (all 200: the worst case; a fifth: a busy server).
 *
 *   bench_off_cpu [batches] [capture.gz ...]   (default 101 batches, the four captures)
 *
 * Every figure is the median over the batches of (time of a batch / operations in it),
 * CLOCK_MONOTONIC. The captures hold 40-53 threads; each visit lists all of them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "guestos/linux/kernel.h"
#include "guestos/linux/orc_load.h"
#include "guestos/linux/threads.h"
#include "guestos/tests/capture_load.h"
#include "guestwalk/unwind.h"

#define VISITS_PER_BATCH 20
#define THREADS          512
#define HZ               50.0  /* record --off-cpu's default */
#define GUEST_THREADS    200.0 /* the guest */

struct guest {
    struct captured c;
    struct lx_kernel *k;
    struct lx_proc_layout pl;
    struct lx_switch_layout sl;
    struct lx_kread kr;
    struct lx_threads t;
    struct lx_orc *orc;
    struct gw_walker w;
    struct guestos_thread th[THREADS];
    unsigned n;
};

static int keep(void *ctx, const struct guestos_thread *t)
{
    struct guest *g = ctx;
    if (g->n < THREADS)
        g->th[g->n++] = *t;
    return 0;
}

static int open_guest(struct guest *g, const char *path)
{
    struct hv_err err = {0};
    char why[192];
    if (capture_load(path, &g->c, &err) < 0) {
        fprintf(stderr, "bench_off_cpu: %s\n", err.msg);
        return -1;
    }
    g->k = lx_kernel_new();
    if (!g->k || lx_kernel_discover(g->k, &g->c.mem, &err) != 1 ||
        !lx_proc_layout_of(g->k, &g->pl, why, sizeof(why)) ||
        lx_kread_init_kernel(&g->kr, g->k, &g->c.mem, why, sizeof(why)) < 0 ||
        !lx_threads_init(&g->t, g->k, &g->kr, &g->pl, &g->sl, why, sizeof(why)) ||
        !(g->orc = lx_orc_load(g->k, why, sizeof(why))) ||
        gw_walker_init(&g->w, &g->c.mem, NULL, &err) < 0) {
        fprintf(stderr, "bench_off_cpu: %s: %s\n", path, err.msg[0] ? err.msg : why);
        return -1;
    }
    g->n = 0;
    lx_kread_forget(&g->kr);
    if (lx_threads_each(&g->t, keep, g, THREADS, why, sizeof(why)) < 20) {
        fprintf(stderr, "bench_off_cpu: %s: %u threads\n", path, g->n);
        return -1;
    }
    return 0;
}

static int count(void *ctx, const struct guestos_thread *t)
{
    (void)t;
    (*(volatile unsigned *)ctx)++;
    return 0;
}

/* ns per thread listed. */
static double list_batch(struct guest *g)
{
    char why[128];
    volatile unsigned n = 0;
    uint64_t t0 = now_ns();
    for (int v = 0; v < VISITS_PER_BATCH; v++) {
        lx_kread_forget(&g->kr);
        (void)lx_threads_each(&g->t, count, (void *)&n, THREADS, why, sizeof(why));
    }
    return (double)(now_ns() - t0) / (double)n;
}

/* ns per thread walked (registers, kernel stack with ORC, the ran-since check). */
static double walk_batch(struct guest *g, unsigned *frames)
{
    uint64_t pc[64];
    unsigned walked = 0;
    *frames = 0;
    uint64_t t0 = now_ns();
    for (int v = 0; v < VISITS_PER_BATCH; v++) {
        for (unsigned i = 0; i < g->n; i++) {
            struct gw_regs kr, ur;
            lx_kread_forget(&g->kr);
            if (!lx_thread_regs(&g->t, &g->th[i], &kr, &ur))
                continue;
            struct gw_snapshot snap = {.cr0 = PT_CR0_PE | PT_CR0_PG,
                                       .cr3 = g->t.kernel_root,
                                       .cr4 = PT_CR4_PAE | (g->t.la57 ? PT_CR4_LA57 : 0),
                                       .efer = PT_EFER_LME | PT_EFER_LMA | PT_EFER_NXE};
            gw_walker_begin(&g->w, &snap);
            struct gw_stack st = GW_STACK_INIT(pc, 64);
            lx_orc_unwind(g->orc, &g->w, &kr, &st);
            (void)lx_thread_unchanged(&g->t, &g->th[i]);
            *frames += st.count;
            walked++;
        }
    }
    return walked ? (double)(now_ns() - t0) / (double)walked : 0;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 101;
    if (batches < 3 || batches > 100000) {
        fprintf(stderr, "usage: bench_off_cpu [batches 3..100000] [capture.gz ...]\n");
        return 2;
    }
    static const char *const dflt[] = {CAPTURE_DIR "/5.10.0-32-amd64.capture.gz",
                                       CAPTURE_DIR "/6.1.0-56-amd64.capture.gz",
                                       CAPTURE_DIR "/6.1.0-56-cloud-amd64.capture.gz",
                                       CAPTURE_DIR "/7.2.13+deb14-amd64.capture.gz"};
    const char *const *paths = argc > 2 ? (const char *const *)argv + 2 : dflt;
    int npaths = argc > 2 ? argc - 2 : 4;
    double *a = calloc((size_t)batches, sizeof(double)), *b = calloc((size_t)batches, sizeof(double));
    if (!a || !b)
        return 1;
    printf("%-24s %8s %14s %14s %8s %12s %12s\n", "captured guest", "threads", "list ns/thread",
           "walk ns/thread", "frames", "200@50Hz all", "200@50Hz 1/5");
    double worst = 0;
    for (int p = 0; p < npaths; p++) {
        static struct guest g;
        memset(&g, 0, sizeof(g));
        if (open_guest(&g, paths[p]) < 0)
            return 1;
        unsigned frames = 0;
        for (int i = 0; i < batches; i++) {
            a[i] = list_batch(&g);
            b[i] = walk_batch(&g, &frames);
        }
        double list = median(a, batches), walk = median(b, batches);
        /* A visit lists every thread; a thread that slept again is walked once. */
        double all = 100.0 * HZ * GUEST_THREADS * (list + walk) / 1e9;
        double fifth = 100.0 * HZ * GUEST_THREADS * (list + walk / 5) / 1e9;
        if (all > worst)
            worst = all;
        printf("%-24s %8u %14.1f %14.1f %8.1f %11.3f%% %11.3f%%\n", g.k->vmci.osrelease, g.n, list,
               walk, (double)frames / VISITS_PER_BATCH / g.n, all, fifth);
        gw_walker_fini(&g.w);
        lx_orc_free(g.orc);
        lx_kernel_free(g.k);
        capture_free(&g.c);
    }
    printf("visits of a 200-thread guest at 50 Hz, every thread walked each time: at most %.3f%% "
           "of one host CPU, on the drain thread (none on a vCPU thread)\n",
           worst);
    free(a);
    free(b);
    return 0;
}
