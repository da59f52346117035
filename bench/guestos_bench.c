/* guestos benchmark (not a test): what reading a Linux guest's current task costs at an exit
 * (lx_task_read: per-CPU pointer, pid, tgid, flags, comm; in kernel mode the task's own
 * address space through mm->pgd; for a worker thread its leader's name too), beside the
 * 8-frame user walk the same exit does, in the same run on the same synthetic guest.
 *
 *   bench_guestos [batches] [capture.gz]   (default 201, the generic kernel's capture)
 *
 * The guest is guestwalk's synthetic 4-level image with two CPUs' per-CPU areas and tasks laid
 * out as Debian 6.1's BTF gives them (task_struct 9.6 KiB: pid at 2416, comm at 2976, the task's
 * fields on three pages). Every figure is the median over `batches` of (time of a batch /
 * operations in it), CLOCK_MONOTONIC; each operation starts with gw_walker_begin (an empty
 * translation cache), as at an exit. The last line reads a real task in memory captured from a
 * Debian 6.1 guest (guestos/tests/data, tests/linux/capture.sh): pid 1 in the kernel, through
 * the guest's own page tables.
 *
 * Kernel stacks with the guest kernel's ORC tables (docs/orc.md), on the captured Debian 6.1
 * kernel's own table (384,849 entries): a sleeping task's real stack from its switch frame to
 * its system call's user entry, a lookup alone at spread-out PCs, and a 32-frame stack built in
 * the synthetic image from the table's own CALL entries, beside a 32-frame frame-pointer walk
 * of the same image (the ratio is what ORC adds per kernel sample). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "guestos/linux/kernel.h"
#include "guestos/linux/orc_load.h"
#include "guestos/linux/pagecache.h"
#include "guestos/linux/process.h"
#include "guestos/linux/switched.h"
#include "guestos/linux/task.h"
#include "guestos/tests/capture_load.h"
#include "guestwalk/tests/guest_image.h"
#include "guestwalk/unwind.h"
#include "sampler/exit/id_label.h"

#define PERCPU   0xffff888000100000ull
#define CURRENT  0x1fb80ull
#define TASKS    0xffff888000400000ull
#define TASK_SZ  0x4000ull
#define MM       0xffff888000600000ull
#define MM_PGD   0xffff888000610000ull
#define CODE_VA  0x400000ull
#define STACK_VA 0x7ffe00000000ull
#define PER      200                   /* operations per batch */
#define KSTACK   0xffffc90000010000ull /* a 16 KiB kernel stack in the synthetic image */

static const struct lx_task_layout layout = {.known = true,
                                             .pid = 2416,
                                             .tgid = 2420,
                                             .flags = 44,
                                             .mm = 2272,
                                             .group_leader = 2480,
                                             .comm = 2976,
                                             .comm_size = 16,
                                             .mm_pgd = 80};

struct bench {
    struct gimg g;
    struct gw_walker w;
    struct lx_task_reader *r;
    struct guestos_vcpu vc;
    uint64_t rbp8; /* an 8-frame user chain */
    volatile uint64_t sink;
};

static int task(struct bench *b, unsigned i, int32_t pid, int32_t tgid, const char *comm,
                uint64_t leader)
{
    uint64_t t = TASKS + i * TASK_SZ, mm = MM;
    char c[16] = {0};
    memcpy(c, comm, strlen(comm));
    uint32_t flags = 0x400040;
    return gimg_write(&b->g, t + layout.pid, &pid, 4) |
           gimg_write(&b->g, t + layout.tgid, &tgid, 4) |
           gimg_write(&b->g, t + layout.flags, &flags, 4) |
           gimg_write(&b->g, t + layout.comm, c, 16) |
           gimg_write_u64(&b->g, t + layout.group_leader, leader) |
           gimg_write_u64(&b->g, t + layout.mm, mm);
}

static int build(struct bench *b)
{
    struct gimg *g = &b->g;
    if (gimg_init(g, false) ||
        gimg_map_fresh(g, (PERCPU + CURRENT) & ~0xfffull, 4096, GIMG_KERN_RW) ||
        gimg_map_fresh(g, TASKS, 2 * TASK_SZ, GIMG_KERN_RW) ||
        gimg_map_fresh(g, MM, 4096, GIMG_KERN_RW) ||
        gimg_map_fresh(g, MM_PGD, 4096, GIMG_KERN_RW) ||
        gimg_map_fresh(g, CODE_VA, 4096, GIMG_P | GIMG_US) ||
        gimg_map_fresh(g, STACK_VA, 1 << 16, GIMG_USER_RW | GIMG_XD) ||
        gimg_map_fresh(g, KSTACK, 16384, GIMG_KERN_RW) ||
        gimg_write_u64(g, MM + layout.mm_pgd, MM_PGD) ||
        task(b, 0, 812, 812, "hv_threads", TASKS) || task(b, 1, 813, 812, "worker", TASKS) ||
        gw_walker_init(&b->w, &g->mem, NULL, NULL) < 0)
        return -1;
    uint64_t ret[8];
    for (unsigned i = 0; i < 7; i++)
        ret[i] = CODE_VA + 0x10 * (i + 1);
    ret[7] = 0;
    b->rbp8 = STACK_VA + 0x1000;
    if (gimg_write_chain(g, b->rbp8, 8, 96, ret))
        return -1;
    b->r = calloc(1, sizeof(*b->r) + sizeof(b->r->cpus[0]));
    if (!b->r)
        return -1;
    b->r->current_ptr = CURRENT;
    b->r->layout = layout;
    b->r->ncpus = 1;
    b->r->cpus[0] = (struct lx_cpu_area){PERCPU, 0};
    guestos_vcpu_init(NULL, &b->vc);
    return 0;
}

enum op { OP_WALK8, OP_TASK_USER, OP_TASK_KERNEL, OP_TASK_WORKER, OP_LABEL, OP_COUNT };
static const char *const op_names[OP_COUNT] = {
    "user walk, 8 frames (begin + unwind; the exit's own cost)",
    "task read, user mode (CR3 gives the process)",
    "task read, kernel mode (+ mm->pgd translated)",
    "task read, kernel mode, worker thread (+ leader's comm)",
    "label compare, unchanged (id_label_set per stop)",
};

/* The captured Debian guest: its kernel described, its reader, a kernel-mode stop on CPU 0. */
struct real {
    struct captured c;
    struct lx_kernel *k;
    struct lx_task_reader *r;
    struct gw_walker w;
    struct gw_snapshot snap;
    struct guestos_vcpu vc;
    struct lx_orc *orc;   /* the kernel's ORC tables */
    struct lx_kread kr;   /* the kernel's page tables, for the task list */
    uint64_t sleep_task;  /* a sleeping `sleep` */
    struct gw_regs sleep; /* its switch frame */
    struct gw_regs orc32; /* a 32-frame stack in the synthetic image (KSTACK) */
    struct gw_regs fp32;  /* a 32-frame frame-pointer chain there */
    /* The sleeping task's executable (busybox) in the page cache. */
    struct lx_file_layout fl;
    struct lx_cache_layout cl;
    uint64_t vmemmap, exe_mapping, exe_pages;
};

static int find_sleep(void *ctx, uint64_t task)
{
    struct real *x = ctx;
    char comm[16];
    if (!lx_kread(&x->kr, task + x->k->task.comm, comm, 16) || strncmp(comm, "sleep", 16))
        return 0;
    x->sleep_task = task;
    return 1;
}

/* A 32-frame kernel stack for the captured kernel's table, built in the synthetic image: each
 * return address lands on a CALL entry whose CFA is the stack pointer plus its offset; the last
 * on an END_OF_STACK entry (a kernel thread's ret_from_fork). And a frame-pointer chain of 32
 * records beside it. */
static int build_kernel_stacks(struct bench *b, struct real *x)
{
    const struct lx_orc_table *t = &x->orc->vmlinux;
    uint64_t sp = KSTACK + 0x100, end = 0;
    size_t want = 31, got = 0; /* and the frame in ret_from_fork: 32 */
    x->orc32 = (struct gw_regs){.rsp = sp};
    for (size_t i = 0; i < t->n && !end; i++) {
        const struct lx_orc_entry *e = &t->e[i];
        uint64_t at = t->lo + t->ip[i];
        if (lx_orc_find(t, at) != e || lx_orc_find(t, at + 1) != e)
            continue; /* a terminator sharing its IP, or a one-byte row */
        if (got < want && e->type == LX_ORC_TYPE_CALL && e->sp_reg == LX_ORC_REG_SP &&
            e->bp_reg == LX_ORC_REG_UNDEFINED && e->sp_offset >= 8 && e->sp_offset <= 256 &&
            (i * 7919) % 97 == 0) { /* spread over the table */
            if (got == 0)
                x->orc32.rip = at;
            else if (gimg_write_u64(&b->g, sp - 8, at + 1))
                return -1;
            sp += (uint64_t)e->sp_offset;
            got++;
        } else if (got == want && e->type == LX_ORC_TYPE_END_OF_STACK) {
            end = at;
        }
    }
    if (got < want || !end || gimg_write_u64(&b->g, sp - 8, end + 1))
        return -1;
    uint64_t ret[32];
    for (unsigned i = 0; i < 31; i++)
        ret[i] = 0xffffffff81000000ull + 0x10 * (i + 1);
    ret[31] = 0;
    x->fp32 = (struct gw_regs){
        .rip = 0xffffffff81000008ull, .rsp = KSTACK + 0x2000, .rbp = KSTACK + 0x2000};
    return gimg_write_chain(&b->g, KSTACK + 0x2000, 32, 48, ret) ? -1 : 0;
}

enum korc { K_SLEEP, K_LOOKUP, K_ORC32, K_FP32, K_COUNT };
static const char *const korc_names[K_COUNT] = {
    "ORC walk, captured sleeping task (8 frames to user entry)",
    "ORC table lookup alone (spread-out PCs, 384,849 entries)",
    "ORC walk, 32 frames on the captured kernel's table",
    "frame-pointer walk, 32 frames (same image, kernel half)",
};

static double korc_batch(struct bench *b, struct real *x, enum korc op)
{
    struct gw_snapshot s = gimg_cpu(&b->g, 0, 0, 0, 0);
    uint64_t pcs[64];
    const struct lx_orc_table *t = &x->orc->vmlinux;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < PER; i++) {
        struct gw_stack st = GW_STACK_INIT(pcs, 64);
        switch (op) {
        case K_SLEEP:
            gw_walker_begin(&x->w, &x->snap);
            if (lx_orc_unwind(x->orc, &x->w, &x->sleep, &st) != 8 || !st.user_entry) {
                fprintf(stderr, "bench_guestos: sleeping task: %u frames, %s\n", st.count,
                        gw_stop_reason_str(st.stop));
                abort();
            }
            break;
        case K_LOOKUP:
            b->sink += lx_orc_find(t, t->lo + (i * 2654435761u) % (t->hi - t->lo))->sp_offset;
            break;
        case K_ORC32:
            gw_walker_begin(&b->w, &s);
            if (lx_orc_unwind(x->orc, &b->w, &x->orc32, &st) != 32 ||
                st.stop != GW_STOP_CHAIN_END) {
                fprintf(stderr, "bench_guestos: ORC 32: %u frames, %s\n", st.count,
                        gw_stop_reason_str(st.stop));
                abort();
            }
            break;
        case K_FP32:
            gw_walker_begin(&b->w, &s);
            if (gw_unwind_regs(&b->w, &x->fp32, &st) != 32) {
                fprintf(stderr, "bench_guestos: FP 32: %u frames, %s\n", st.count,
                        gw_stop_reason_str(st.stop));
                abort();
            }
            break;
        default:
            break;
        }
        b->sink += st.count;
    }
    return (double)(now_ns() - t0) / PER;
}

/* The captured kernel's ORC tables, its sleeping task and the synthetic 32-frame stacks. */
static int load_orc(struct bench *b, struct real *x)
{
    char why[192];
    struct lx_proc_layout pl;
    struct lx_switch_layout sl;
    if (!(x->orc = lx_orc_load(x->k, why, sizeof(why))) ||
        !lx_proc_layout_of(x->k, &pl, why, sizeof(why)) ||
        !lx_switch_layout_of(x->k, &sl, why, sizeof(why)) ||
        lx_kread_init_kernel(&x->kr, x->k, &x->c.mem, why, sizeof(why)) < 0 ||
        lx_tasks_each(&x->kr, &pl, x->k->sym.init_task, find_sleep, x) != 1 ||
        !lx_task_switched_regs(&x->kr, &sl, x->sleep_task, &x->sleep) ||
        build_kernel_stacks(b, x) < 0) {
        fprintf(stderr, "bench_guestos: ORC: %s\n", x->orc ? why : "no tables");
        return -1;
    }
    /* Its executable's pages in the page cache (a capture from before they were kept: none). */
    uint64_t mm = 0;
    struct lx_page_file f;
    if (lx_file_layout_of(x->k, &x->fl, why, sizeof(why)) &&
        lx_cache_layout_of(x->k, &x->cl, why, sizeof(why)) &&
        lx_kread(&x->kr, x->k->sym.vmemmap_base, &x->vmemmap, 8) &&
        lx_kread(&x->kr, x->sleep_task + x->k->task.mm, &mm, 8) &&
        lx_exe_mapping(&x->kr, &x->fl, pl.exe_file, mm, &x->exe_mapping) &&
        lx_mapping_file(&x->kr, &x->fl, x->exe_mapping, &f))
        x->exe_pages = (f.size + 4095) / 4096;
    return 0;
}

/* ns per page: the executable read whole from the page cache, lookup and 4 KiB copy each. */
static double cache_batch(struct real *x, volatile uint64_t *sink)
{
    static uint8_t page[4096];
    uint64_t t0 = now_ns();
    for (uint64_t p = 0; p < x->exe_pages; p++) {
        if (lx_cache_read(&x->kr, &x->cl, &x->fl, x->vmemmap, x->exe_mapping, p, page) !=
            LX_CACHE_CACHED)
            abort();
        *sink += page[p % 4096];
    }
    return (double)(now_ns() - t0) / (double)x->exe_pages;
}

static int load_real(struct real *x, const char *path)
{
    struct hv_err err = {0};
    char why[192];
    uint64_t pgt = 0;
    if (capture_load(path, &x->c, &err) < 0 || !(x->k = lx_kernel_new()) ||
        lx_kernel_discover(x->k, &x->c.mem, &err) != 1 ||
        !(x->r = lx_task_reader_build(x->k, why, sizeof(why))) ||
        !lx_vmcoreinfo_symbol(&x->k->vmci, "init_top_pgt", &pgt) ||
        gw_walker_init(&x->w, &x->c.mem, NULL, &err) < 0) {
        fprintf(stderr, "bench_guestos: %s: %s\n", path, err.msg[0] ? err.msg : "no task reader");
        return -1;
    }
    x->snap = (struct gw_snapshot){.cr0 = 0x80000011,
                                   .cr3 = pgt - LX_START_KERNEL_MAP + x->k->img.phys_base,
                                   .cr4 = 0x20,
                                   .efer = 0xd01,
                                   .gs_base = x->r->cpus[0].base};
    guestos_vcpu_init(NULL, &x->vc);
    return 0;
}

static double real_batch(struct real *x, volatile uint64_t *sink)
{
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < PER; i++) {
        gw_walker_begin(&x->w, &x->snap);
        struct guestos_ident id = {.proc_key = 0x1000, .as_root = 0x1000};
        lx_task_read(x->r, &x->vc, &x->w, &id);
        if (!id.task.known || id.task.pid != 1)
            abort();
        *sink += id.proc_key;
    }
    return (double)(now_ns() - t0) / PER;
}

static double batch(struct bench *b, enum op op)
{
    struct gw_snapshot s = gimg_cpu(&b->g, CODE_VA + 8, b->rbp8 - 64, b->rbp8,
                                    op == OP_TASK_USER || op == OP_WALK8 ? 3 : 0);
    s.gs_base = PERCPU;
    s.kernel_gs_base = PERCPU;
    s.have = GW_SNAP_MSRS;
    uint64_t cur = TASKS + (op == OP_TASK_WORKER ? TASK_SZ : 0);
    if (gimg_write_u64(&b->g, PERCPU + CURRENT, cur))
        abort();
    static struct id_label label;
    char comm[GUESTOS_COMM_LEN] = "hv_threads";
    id_label_set(&label, 812, false, comm);
    uint64_t pcs[16];
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < PER; i++) {
        if (op == OP_LABEL) {
            id_label_set(&label, 812, false, comm);
            continue;
        }
        gw_walker_begin(&b->w, &s);
        if (op == OP_WALK8) {
            struct gw_stack st = GW_STACK_INIT(pcs, 16);
            b->sink += gw_unwind(&b->w, &st);
            continue;
        }
        struct guestos_ident id = {.proc_key = 0x1000, .as_root = 0x1000};
        lx_task_read(b->r, &b->vc, &b->w, &id);
        if (!id.task.known)
            abort();
        b->sink += id.proc_key;
    }
    return (double)(now_ns() - t0) / PER;
}

int main(int argc, char **argv)
{
    unsigned batches = argc > 1 ? (unsigned)atoi(argv[1]) : 201;
    if (batches < 3 || batches > 100000) {
        fprintf(stderr, "usage: bench_guestos [batches 3..100000] [capture.gz]\n");
        return 2;
    }
    static struct bench b;
    if (build(&b) < 0) {
        fprintf(stderr, "bench_guestos: cannot build the guest image\n");
        return 1;
    }
    double *v[OP_COUNT];
    for (int o = 0; o < OP_COUNT; o++)
        if (!(v[o] = calloc(batches, sizeof(double))))
            return 1;
    static struct real x;
    const char *capture = argc > 2 ? argv[2] : CAPTURE_FILE;
    bool real = load_real(&x, capture) == 0;
    double *rv = calloc(batches, sizeof(double));
    double *kv[K_COUNT];
    for (int o = 0; o < K_COUNT; o++)
        if (!(kv[o] = calloc(batches, sizeof(double))))
            return 1;
    bool orc = real && load_orc(&b, &x) == 0;
    bool cache = orc && x.exe_pages;
    double *cv = calloc(batches, sizeof(double));
    if (!rv || !cv)
        return 1;
    for (unsigned k = 0; k < batches; k++) { /* interleaved: host noise lands on all alike */
        for (int o = 0; o < OP_COUNT; o++)
            v[o][k] = batch(&b, (enum op)o);
        if (real)
            rv[k] = real_batch(&x, &b.sink);
        for (int o = 0; orc && o < K_COUNT; o++)
            kv[o][k] = korc_batch(&b, &x, (enum korc)o);
        if (cache)
            cv[k] = cache_batch(&x, &b.sink);
    }
    double med[OP_COUNT];
    for (int o = 0; o < OP_COUNT; o++) {
        qsort(v[o], batches, sizeof(double), cmp_double);
        med[o] = v[o][batches / 2];
        printf("%-58s %7.1f ns\n", op_names[o], med[o]);
    }
    printf("%-58s %7.2f\n", "task read (kernel mode, worker) / 8-frame user walk",
           med[OP_TASK_WORKER] / med[OP_WALK8]);
    if (real) {
        qsort(rv, batches, sizeof(double), cmp_double);
        printf("%-58s %7.1f ns\n", "task read, kernel mode, captured Debian 6.1 guest (pid 1)",
               rv[batches / 2]);
        printf("%-58s %7.2f\n", "captured guest's task read / 8-frame user walk",
               rv[batches / 2] / med[OP_WALK8]);
    } else {
        printf("(no captured guest: %s)\n", capture);
    }
    double kmed[K_COUNT];
    for (int o = 0; orc && o < K_COUNT; o++) {
        qsort(kv[o], batches, sizeof(double), cmp_double);
        kmed[o] = kv[o][batches / 2];
        printf("%-58s %7.1f ns\n", korc_names[o], kmed[o]);
    }
    if (orc)
        printf("%-58s %7.2f\n", "ORC 32-frame walk / frame-pointer 32-frame walk",
               kmed[K_ORC32] / kmed[K_FP32]);
    if (cache) {
        qsort(cv, batches, sizeof(double), cmp_double);
        printf("%-58s %7.1f ns\n", "page-cache read of a 4 KiB file page (busybox, captured)",
               cv[batches / 2]);
        printf("%-58s %7.2f\n", "page-cache page read / 8-frame user walk",
               cv[batches / 2] / med[OP_WALK8]);
    }
    free(cv);
    free(rv);
    for (int o = 0; o < OP_COUNT; o++)
        free(v[o]);
    free(b.r);
    return 0;
}
