/* Java frame walks' cost (not a test; docs/java.md): Debian's OpenJDK 17 on this host running
 * Chains, its chains-deep thread stopped (ptrace) in a stack of 30 frames of Chains.deep above
 * leafA (C2's code, some of it inlined), read from outside as a guest's would be:
 *
 *   walk    the Java frames from the thread's registers (hs_walk: blob lookups, frame sizes,
 *           PcDescs and scope chains): what a sample takes at an exit;
 *   guest   the same walk with the copied pages mapped into a guest's memory (user pages of page
 *           tables built for it) and read through a vCPU walker's translation cache, as the
 *           exit path reads them: its cost at an exit;
 *   names   each frame's class, method, signature, file and line: what the drain thread
 *           resolves once per method.
 *
 * The process's pages are copied once while the thread is stopped (process_vm_readv), then
 * every walk reads the copies. Medians over the batches.
 *
 *   bench_java [batches]   (default 101) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "guestwalk/tests/guest_image.h"
#include "java/hs_walk.h"
#include "java/tests/live_jvm.h"

#define PER   1000
#define PAGES 2048

struct cache {
    pid_t pid;
    uint64_t va[PAGES];
    uint8_t (*data)[4096];
    unsigned n, last;
};

static const uint8_t *page(struct cache *c, uint64_t va)
{
    if (c->n && c->va[c->last] == va)
        return c->data[c->last];
    for (unsigned i = 0; i < c->n; i++)
        if (c->va[i] == va) {
            c->last = i;
            return c->data[i];
        }
    if (c->n == PAGES)
        return NULL;
    struct iovec local = {c->data[c->n], 4096}, remote = {(void *)(uintptr_t)va, 4096};
    if (process_vm_readv(c->pid, &local, 1, &remote, 1, 0) != 4096)
        return NULL;
    c->va[c->n] = va;
    return c->data[c->n++];
}

static bool rd(void *ctx, uint64_t va, void *dst, size_t len)
{
    struct cache *c = ctx;
    uint8_t *d = dst;
    while (len) {
        const uint8_t *p = page(c, va & ~4095ull);
        size_t off = va & 4095, n = 4096 - off < len ? 4096 - off : len;
        if (!p)
            return false;
        memcpy(d, p + off, n);
        d += n;
        va += n;
        len -= n;
    }
    return true;
}

static bool map_guest(const struct cache *c, struct gimg *g)
{
    if (gimg_init(g, false) != 0)
        return false;
    for (unsigned i = 0; i < c->n; i++) {
        uint64_t gpa = gimg_alloc_page1(g);
        if (!gpa || !gimg_map(g, c->va[i], gpa, 4096, GIMG_USER_RW))
            return false;
        memcpy(gimg_host(g, gpa), c->data[i], 4096);
    }
    return true;
}

static bool rd_guest(void *ctx, uint64_t va, void *dst, size_t len)
{
    return gw_read_virt(ctx, va, dst, len, true, NULL) == 0;
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 101;
    if (batches < 3 || batches > 100000) {
        fprintf(stderr, "usage: bench_java [batches 3..100000]\n");
        return 2;
    }
    static struct live_jvm jvm;
    if (!live_jvm_start(&jvm, NULL, HV_CLASSES)) {
        fprintf(stderr, "bench_java: %s\n", jvm.why);
        return 1;
    }
    int rc = 1;
    static struct cache c;
    c.pid = jvm.pid;
    c.data = calloc(PAGES, 4096);
    struct rt_mem live = {live_jvm_read, &jvm}, m = {rd, &c};
    struct hs_vmstructs vs;
    struct hs_layout l;
    struct hs_code_cache cc;
    struct hv_err err = {0};
    if (!c.data || hs_vmstructs_read(&vs, &live, jvm.addr, &err) < 0 ||
        hs_layout_resolve(&l, &vs, &live, &err) < 0 ||
        hs_code_cache_read(&cc, &l, &live, &err) < 0) {
        fprintf(stderr, "bench_java: %s\n", c.data ? err.msg : "out of memory");
        goto out;
    }
    pid_t tid = live_jvm_thread(&jvm, "chains-deep");
    sleep(3); /* past warm-up: C2's code */
    struct hs_frame f[128];
    struct hs_regs r0 = {0}, r;
    unsigned n = 0;
    /* a stop in Java code whose walk is at least 32 frames, its pages copied while stopped */
    for (int tries = 0; tries < 200 && n < 32; tries++) {
        if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0 || ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0)
            break;
        int st;
        struct user_regs_struct regs;
        waitpid(tid, &st, __WALL);
        ptrace(PTRACE_GETREGS, tid, 0, &regs);
        r0 = (struct hs_regs){regs.rip, regs.rsp, regs.rbp};
        c.n = 0;
        r = r0;
        n = hs_in_code_cache(&cc, r.pc) ? hs_walk(&cc, &l, &m, &r, f, 128) : 0;
        ptrace(PTRACE_DETACH, tid, 0, 0);
        usleep(10000);
    }
    if (n < 32) {
        fprintf(stderr, "bench_java: no stop of chains-deep walked 32 frames (%u)\n", n);
        goto out;
    }
    struct hs_method_info mi;
    for (unsigned i = 0; i < n; i++)
        if (f[i].kind != HS_FRAME_STUB && hs_method_read(&l, &m, f[i].code, &mi))
            (void)hs_method_line(&l, &m, f[i].code, f[i].bci);
    unsigned pages = c.n;
    static struct gimg g;
    struct gw_walker w;
    if (!map_guest(&c, &g) || gw_walker_init(&w, &g.mem, NULL, NULL) != 0) {
        fprintf(stderr, "bench_java: cannot build the guest image\n");
        goto out;
    }
    struct gw_snapshot snap = gimg_cpu(&g, r0.pc, r0.sp, r0.fp, 3);
    struct rt_mem gm = {rd_guest, &w};
    gw_walker_begin(&w, &snap);
    r = r0;
    if (hs_walk(&cc, &l, &gm, &r, f, 128) != n) {
        fprintf(stderr, "bench_java: the guest's copy does not walk as the process\n");
        goto out;
    }
    unsigned inlined = 0;
    for (unsigned i = 0; i < n; i++)
        inlined += f[i].kind == HS_FRAME_INLINED;
    double *walk = calloc((size_t)batches, sizeof(double)),
           *guest = calloc((size_t)batches, sizeof(double)),
           *names = calloc((size_t)batches, sizeof(double));
    volatile uint64_t sink = 0;
    for (int b = 0; b < batches; b++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < PER; i++) {
            r = r0;
            sink += hs_walk(&cc, &l, &m, &r, f, 128);
        }
        walk[b] = (double)(now_ns() - t0) / PER;
        t0 = now_ns();
        for (int i = 0; i < PER; i++) {
            gw_walker_begin(&w, &snap);
            r = r0;
            sink += hs_walk(&cc, &l, &gm, &r, f, 128);
        }
        guest[b] = (double)(now_ns() - t0) / PER;
        t0 = now_ns();
        for (int i = 0; i < PER / 10; i++)
            for (unsigned k = 0; k < n; k++)
                if (f[k].kind != HS_FRAME_STUB && hs_method_read(&l, &m, f[k].code, &mi))
                    sink += (uint64_t)hs_method_line(&l, &m, f[k].code, f[k].bci);
        names[b] = (double)(now_ns() - t0) / (PER / 10) / n;
    }
    qsort(walk, (size_t)batches, sizeof(double), cmp_double);
    qsort(guest, (size_t)batches, sizeof(double), cmp_double);
    qsort(names, (size_t)batches, sizeof(double), cmp_double);
    double wm = walk[batches / 2], gm_ = guest[batches / 2], nm = names[batches / 2];
    printf("%-62s %8.1f ns\n", "Java walk of the stack (exit path), pages in memory", wm);
    printf("%-62s %8u\n", "  its Java frames", n);
    printf("%-62s %8u\n", "  of them inlined (from the PcDescs' scopes)", inlined);
    printf("%-62s %8u\n", "  pages it reads (each a translation in a guest)", pages);
    printf("%-62s %8.1f ns\n", "the same in guest memory, through a walker (exit path)", gm_);
    printf("%-62s %8.1f ns\n", "  a frame", gm_ / n);
    printf("%-62s %8.1f ns\n", "class, method, signature, file, line of one frame (drain)", nm);
    printf("JVM %s, %s\n", l.release, jvm.libjvm);
    (void)sink;
    rc = 0;
out:
    live_jvm_stop(&jvm);
    return rc;
}
