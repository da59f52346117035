/* Python frame walks' cost (not a test; docs/python.md): Debian's python3.11 on this host
 * asleep 32 Python frames deep (31 calls of a recursive function under <module>), read from
 * outside as a guest's would be:
 *
 *   chain   the thread state of its tid and the frame chain (code object and instruction of each
 *           frame): what a sample would take at an exit;
 *   guest   the same chain with the copied pages mapped into a guest's memory (user pages of
 *           page tables built for it) and read through a vCPU walker's translation cache, as
 *           the exit path reads them (sampler/exit/py_stack.c): its cost at an exit;
 *   names   each frame's qualified name, file and line (its code object's strings and location
 *           table): what the drain thread resolves once per code object.
 *
 * The process's pages are copied once (process_vm_readv), then every walk reads the copies, as
 * the exit path reads guest memory it has mapped; the page count is what a guest walk
 * translates on top (bench_guestwalk: ~15 ns a 4-level translation). Medians over the batches.
 *
 *   bench_python [batches]   (default 101) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "guestwalk/tests/guest_image.h"
#include "python/py_code.h"

#define PYTHON "/usr/bin/python3.11"
/* Debian 12's python3.11 is not PIE: its dynamic symbols are their addresses (readelf -Ws). */
#define PER   1000
#define PAGES 512

struct cache {
    pid_t pid;
    uint64_t va[PAGES];
    uint8_t (*data)[4096];
    unsigned n, last;
};

static const uint8_t *page(struct cache *c, uint64_t va)
{
    /* The last page first, then the rest: as a walker's TLB would hit. */
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

/* The copied pages as a guest's user pages, at their addresses, in page tables of their own. */
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

static uint64_t sym(const char *name)
{
    char cmd[256], line[256];
    snprintf(cmd, sizeof(cmd), "readelf -Ws --dyn-syms %s | awk '$8 == \"%s\" {print $2; exit}'",
             PYTHON, name);
    FILE *p = popen(cmd, "r");
    uint64_t v = 0;
    if (p && fgets(line, sizeof(line), p))
        v = strtoull(line, NULL, 16);
    if (p)
        pclose(p);
    return v;
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 101;
    if (batches < 3 || batches > 100000) {
        fprintf(stderr, "usage: bench_python [batches 3..100000]\n");
        return 2;
    }
    static const char script[] = "import threading, time\n"
                                 "def f(n):\n"
                                 "    if n == 0:\n"
                                 "        print('ready', threading.get_native_id(), flush=True)\n"
                                 "        time.sleep(1000)\n"
                                 "    f(n - 1)\n"
                                 "f(30)\n";
    int out[2];
    if (access(PYTHON, X_OK) != 0 || pipe(out) != 0) {
        fprintf(stderr, "bench_python: %s missing\n", PYTHON);
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        execl(PYTHON, PYTHON, "-S", "-c", script, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[64];
    long tid = 0;
    if (!f || !fgets(line, sizeof(line), f) || sscanf(line, "ready %ld", &tid) != 1) {
        fprintf(stderr, "bench_python: %s did not start\n", PYTHON);
        kill(pid, SIGKILL);
        return 1;
    }
    usleep(100000);
    static struct cache c;
    c.pid = pid;
    c.data = calloc(PAGES, 4096);
    struct rt_mem m = {rd, &c};
    struct py_runtime rt;
    char why[160];
    int rc = 1;
    if (!c.data ||
        py_runtime_open(&rt, &m, sym("_PyRuntime"), sym("Py_Version"), why, sizeof(why)) < 0) {
        fprintf(stderr, "bench_python: %s\n", c.data ? why : "out of memory");
        goto out;
    }
    struct py_frame fr[64];
    uint64_t ts = py_thread_state(&rt, &m, tid, PY_MAX_THREADS);
    unsigned n = ts ? py_frames(&rt, &m, ts, fr, 64) : 0;
    unsigned chain_pages = c.n;
    struct py_code_info ci;
    for (unsigned i = 0; i < n; i++)
        if (!py_code_read(&rt, &m, fr[i].code, &ci) ||
            py_code_line(&rt, &m, fr[i].code, fr[i].instr) < 0)
            n = 0;
    if (n != 32) {
        fprintf(stderr, "bench_python: %u frames read, want 32\n", n);
        goto out;
    }
    /* The same pages in a guest, read through a walker as at an exit. */
    static struct gimg g;
    struct gw_walker w;
    if (!map_guest(&c, &g) || gw_walker_init(&w, &g.mem, NULL, NULL) != 0) {
        fprintf(stderr, "bench_python: cannot build the guest image\n");
        goto out;
    }
    struct gw_snapshot snap = gimg_cpu(&g, 0x401000, 0x7ffc0000, 0x7ffc0000, 3);
    struct rt_mem gm = {rd_guest, &w};
    gw_walker_begin(&w, &snap);
    uint64_t gts = py_thread_state(&rt, &gm, tid, PY_MAX_THREADS);
    if (!gts || py_frames(&rt, &gm, gts, fr, 64) != 32) {
        fprintf(stderr, "bench_python: the guest's copy does not read as the process\n");
        goto out;
    }
    double *chain = calloc((size_t)batches, sizeof(double)),
           *names = calloc((size_t)batches, sizeof(double)),
           *guest = calloc((size_t)batches, sizeof(double));
    volatile uint64_t sink = 0;
    for (int b = 0; b < batches; b++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < PER; i++) {
            uint64_t t = py_thread_state(&rt, &m, tid, PY_MAX_THREADS);
            sink += py_frames(&rt, &m, t, fr, 64);
        }
        chain[b] = (double)(now_ns() - t0) / PER;
        t0 = now_ns();
        for (int i = 0; i < PER / 10; i++)
            for (unsigned k = 0; k < 32; k++) {
                sink += py_code_read(&rt, &m, fr[k].code, &ci);
                sink += (uint64_t)py_code_line(&rt, &m, fr[k].code, fr[k].instr);
            }
        names[b] = (double)(now_ns() - t0) / (PER / 10) / 32;
        /* Each exit is a new stop: the walker's cache starts empty (gw_walker_begin). */
        t0 = now_ns();
        for (int i = 0; i < PER; i++) {
            gw_walker_begin(&w, &snap);
            uint64_t t = py_thread_state(&rt, &gm, tid, PY_MAX_THREADS);
            sink += py_frames(&rt, &gm, t, fr, 64);
        }
        guest[b] = (double)(now_ns() - t0) / PER;
    }
    qsort(chain, (size_t)batches, sizeof(double), cmp_double);
    qsort(names, (size_t)batches, sizeof(double), cmp_double);
    qsort(guest, (size_t)batches, sizeof(double), cmp_double);
    printf("%-62s %8.1f ns\n", "thread state + 32-frame chain (exit path), pages in memory",
           chain[batches / 2]);
    printf("%-62s %8u\n", "  pages it reads (each a translation in a guest)", chain_pages);
    printf("%-62s %8.1f ns\n", "the same in guest memory, through a walker (exit path)",
           guest[batches / 2]);
    printf("%-62s %8.1f ns\n", "name, file and line of one frame (drain thread, per code object)",
           names[batches / 2]);
    printf("CPython %llx, %s\n", (unsigned long long)rt.version, PYTHON);
    free(chain);
    free(names);
    free(guest);
    gw_walker_fini(&w);
    gimg_free(&g);
    rc = 0;
out:
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    free(c.data);
    return rc;
}
