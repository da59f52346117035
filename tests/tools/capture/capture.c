#include "tests/tools/capture/capture.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "guestos/linux/kernel.h"
#include "guestos/linux/kmodules.h"
#include "guestos/linux/orc_load.h"
#include "guestos/linux/process.h"
#include "guestos/linux/switched.h"
#include "guestos/linux/task.h"
#include "guestos/linux/threads.h"
#include "tests/tools/capture/exe_files.h"

#define PAGE 4096ull

/* What the SIGSEGV handler needs (a handler has no other way to reach it). */
static struct {
    uint8_t *base[GMEM_MAX_SLOTS];
    uint64_t size[GMEM_MAX_SLOTS];
    uint8_t *touched[GMEM_MAX_SLOTS]; /* one byte per page */
    unsigned n;
} cap;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    uint8_t *a = si->si_addr;
    for (unsigned i = 0; i < cap.n; i++) {
        if (a >= cap.base[i] && a < cap.base[i] + cap.size[i]) {
            uint64_t page = (uint64_t)(a - cap.base[i]) / PAGE;
            cap.touched[i][page] = 1;
            if (mprotect(cap.base[i] + page * PAGE, PAGE, PROT_READ) == 0)
                return; /* the read is retried and succeeds */
        }
    }
    signal(sig, SIG_DFL); /* a real fault: die of it */
}

static int write_file(const struct gmem *copy, const char *path, uint64_t *npages,
                      struct hv_err *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return hv_errf_errno(err, "%s", path);
    uint32_t nslots = cap.n, np = 0;
    for (unsigned i = 0; i < cap.n; i++)
        for (uint64_t p = 0; p < cap.size[i] / PAGE; p++)
            np += cap.touched[i][p];
    bool ok = fwrite(LX_CAPTURE_MAGIC, 8, 1, f) == 1 && fwrite(&nslots, 4, 1, f) == 1 &&
              fwrite(&np, 4, 1, f) == 1;
    for (unsigned i = 0; ok && i < cap.n; i++) {
        uint64_t range[2] = {copy->slot[i].gpa, copy->slot[i].size};
        ok = fwrite(range, 8, 2, f) == 2;
    }
    for (unsigned i = 0; ok && i < cap.n; i++)
        for (uint64_t p = 0; ok && p < cap.size[i] / PAGE; p++) {
            if (!cap.touched[i][p])
                continue;
            uint64_t gpa = copy->slot[i].gpa + p * PAGE;
            ok = fwrite(&gpa, 8, 1, f) == 1 && fwrite(cap.base[i] + p * PAGE, PAGE, 1, f) == 1;
        }
    if (fclose(f) != 0 || !ok)
        return hv_errf(err, "%s: cannot write the capture", path);
    *npages = np;
    return 0;
}

static int count_symbol(void *ctx, uint64_t addr, char type, const char *name, size_t len)
{
    (void)ctx, (void)addr, (void)type, (void)name, (void)len;
    return 0;
}

/* A vCPU in the kernel's own address space (init_top_pgt), as the walks at an exit see it. */
static struct gw_snapshot kernel_snapshot(const struct lx_kernel *k)
{
    uint64_t pgt = 0;
    int64_t l5 = 0;
    (void)lx_vmcoreinfo_symbol(&k->vmci, "init_top_pgt", &pgt);
    (void)lx_vmcoreinfo_decimal(&k->vmci, "NUMBER(pgtable_l5_enabled)", &l5);
    return (struct gw_snapshot){.cr0 = 0x80000011,
                                .cr3 = pgt - LX_START_KERNEL_MAP + k->img.phys_base,
                                .cr4 = 0x20 | (l5 == 1 ? 0x1000 : 0),
                                .efer = 0xd01,
                                .cpl = 0};
}

struct stacks {
    const struct lx_kernel *k;
    struct lx_kread kr;
    struct lx_switch_layout sl;
    struct gw_walker *w;
    const struct lx_orc *orc;
    FILE *log;
};

/* Every sleeping leader's kernel stack with the ORC unwinder, so a capture holds the tables and
 * the stacks (test_captured.c compares them with the guest's /proc/PID/stack). */
static int unwind_task(void *ctx, uint64_t task)
{
    struct stacks *s = ctx;
    int32_t pid = -1;
    char comm[17] = {0};
    struct gw_regs r;
    if (!lx_kread(&s->kr, task + s->k->task.pid, &pid, 4) ||
        !lx_kread(&s->kr, task + s->k->task.comm, comm, 16) ||
        !lx_task_switched_regs(&s->kr, &s->sl, task, &r))
        return 0;
    uint64_t pc[64];
    struct gw_stack st = GW_STACK_INIT(pc, 64);
    lx_orc_unwind(s->orc, s->w, &r, &st);
    fprintf(s->log, "capture: task %d \"%s\": %u kernel frames, %s%s\n", pid, comm, st.count,
            gw_stop_reason_str(st.stop), st.user_entry ? ", user entry" : "");
    return 0;
}

static void read_stacks(struct lx_kernel *k, const struct gmem *copy, FILE *log)
{
    char why[192];
    struct lx_orc *orc = lx_orc_load(k, why, sizeof(why));
    fprintf(log, "capture: kernel stacks: %s\n", why);
    struct stacks s = {.k = k, .orc = orc, .log = log};
    struct lx_proc_layout pl;
    struct gw_walker w;
    struct hv_err err;
    if (!orc || !lx_proc_layout_of(k, &pl, why, sizeof(why)) ||
        !lx_switch_layout_of(k, &s.sl, why, sizeof(why)) ||
        lx_kread_init_kernel(&s.kr, k, copy, why, sizeof(why)) < 0 ||
        gw_walker_init(&w, copy, NULL, &err) < 0) {
        if (orc)
            fprintf(log, "capture: task stacks: %s\n", why);
        lx_orc_free(orc);
        return;
    }
    struct gw_snapshot snap = kernel_snapshot(k);
    gw_walker_begin(&w, &snap);
    s.w = &w;
    lx_tasks_each(&s.kr, &pl, k->sym.init_task, unwind_task, &s);
    gw_walker_fini(&w);
    lx_orc_free(orc);
}

/* Every thread as an off-CPU visit lists it, with the registers it resumes with and those it
 * entered the kernel with, so a capture holds the task lists, the switch frames and the pt_regs
 * (test_captured.c compares them with the guest's /proc/PID/stat and /proc/PID/syscall). */
struct threads_log {
    struct lx_threads *t;
    FILE *log;
};

static int log_thread(void *ctx, const struct guestos_thread *th)
{
    struct threads_log *l = ctx;
    struct gw_regs k, u;
    bool regs = lx_thread_regs(l->t, th, &k, &u);
    fprintf(l->log,
            "capture: thread %d of %d \"%s\": state %d, cpu %u, %" PRIu64 " ns, %" PRIu64
            " switches%s",
            th->task.tid, th->task.pid, th->task.comm, (int)th->state, th->cpu, th->cpu_ns,
            th->switches, regs ? "" : ", no switch frame");
    if (regs && u.user)
        fprintf(l->log, ", user pc 0x%" PRIx64 " sp 0x%" PRIx64, u.rip, u.rsp);
    fputc('\n', l->log);
    return 0;
}

static void read_threads(struct lx_kernel *k, const struct gmem *copy, FILE *log)
{
    char why[192];
    struct lx_proc_layout pl;
    struct lx_switch_layout sl;
    struct lx_kread kr;
    struct lx_threads t;
    if (!lx_proc_layout_of(k, &pl, why, sizeof(why)) ||
        lx_kread_init_kernel(&kr, k, copy, why, sizeof(why)) < 0 ||
        !lx_threads_init(&t, k, &kr, &pl, &sl, why, sizeof(why))) {
        fprintf(log, "capture: threads: %s\n", why);
        return;
    }
    struct threads_log l = {&t, log};
    long n = lx_threads_each(&t, log_thread, &l, LX_MAX_VISIT_STEPS, why, sizeof(why));
    if (n < 0)
        fprintf(log, "capture: threads: %s\n", why);
    else
        fprintf(log, "capture: %ld threads\n", n);
}

/* Everything the Linux layer reads of a described kernel: its self-description, each CPU's
 * current task, the module list with every module's symbols, the kernel's ORC tables, every
 * sleeping task's kernel stack, and the user processes' executables from the page cache. */
static void read_all(struct lx_kernel *k, const struct gmem *copy, FILE *log)
{
    struct hv_err err = {0};
    if (lx_kernel_describe(k, copy, &err) < 0) {
        fprintf(log, "capture: kernel: %s\n", err.msg);
        return;
    }
    fprintf(log, "capture: Linux %s, KASLR offset 0x%" PRIx64 ", %zu code symbols; %s\n",
            k->vmci.osrelease, k->kaslr_offset, k->syms.n, k->btf_note);
    char why[192];
    struct lx_task_reader *r = lx_task_reader_build(k, why, sizeof(why));
    struct gw_walker w;
    if (r && gw_walker_init(&w, copy, NULL, &err) == 0) {
        for (uint32_t i = 0; i < r->ncpus; i++) {
            struct gw_snapshot s = kernel_snapshot(k);
            s.gs_base = r->cpus[i].base;
            gw_walker_begin(&w, &s);
            struct guestos_vcpu vc;
            guestos_vcpu_init(NULL, &vc);
            struct guestos_ident id = {0};
            lx_task_read(r, &vc, &w, &id);
            fprintf(log,
                    "capture: cpu %" PRIu32 " (per-CPU 0x%" PRIx64 "): %s pid %d tid %d comm "
                    "\"%s\" process \"%s\"%s\n",
                    r->cpus[i].cpu, r->cpus[i].base, id.task.known ? "task" : "no task",
                    id.task.pid, id.task.tid, id.task.comm, id.task.process,
                    id.task.kthread ? " (kernel thread)" : "");
        }
        gw_walker_fini(&w);
    } else {
        fprintf(log, "capture: tasks: %s\n", r ? "no walker" : why);
    }
    free(r);
    read_stacks(k, copy, log);
    read_threads(k, copy, log);
    struct exe_file ef[EXE_FILES_MAX];
    int nf = exe_files_read(k, copy, ef, why, sizeof(why));
    if (nf < 0)
        fprintf(log, "capture: executables' files: %s\n", why);
    for (int i = 0; i < nf; i++)
        fprintf(log,
                "capture: executable inode %" PRIu64 ", %" PRIu64 " bytes, from the page cache: "
                "%" PRIu64 " of %" PRIu64 " pages (%" PRIu64 " holes, %" PRIu64
                " refused), crc32 %08x\n",
                ef[i].ino, ef[i].size, ef[i].cached, ef[i].pages, ef[i].holes, ef[i].bad,
                ef[i].crc32);
    struct lx_kmods km;
    if (lx_kmods_init(&km, k, copy, why, sizeof(why)) < 0) {
        fprintf(log, "capture: modules: %s\n", why);
        return;
    }
    struct lx_kmod m[64];
    int n = lx_kmods_list(&km, m, 64, &err);
    if (n < 0)
        fprintf(log, "capture: modules: %s\n", err.msg);
    for (int i = 0; i < n; i++) {
        long ns = lx_kmods_symbols(&km, &m[i], count_symbol, NULL, &err);
        fprintf(log, "capture: module %s at 0x%" PRIx64 " (+0x%" PRIx64 "): %ld symbols\n",
                m[i].name, m[i].text, m[i].text_size, ns);
    }
}

int lx_capture(const struct gmem *mem, const char *path, FILE *log, struct hv_err *err)
{
    memset(&cap, 0, sizeof(cap));
    struct gmem copy;
    gmem_init(&copy);
    int rc = -1;
    for (unsigned i = 0; i < mem->nslots; i++) {
        uint64_t size = (mem->slot[i].size + PAGE - 1) & ~(PAGE - 1);
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cap.touched[i] = calloc(size / PAGE, 1);
        if (p == MAP_FAILED || !cap.touched[i]) {
            hv_errk(err, HV_ERR_NO_MEMORY,
                    "capture: out of memory for %" PRIu64 " bytes of guest RAM", size);
            if (p != MAP_FAILED)
                munmap(p, size);
            goto out;
        }
        cap.base[i] = p;
        cap.size[i] = size;
        cap.n = i + 1;
        memcpy(p, mem->slot[i].host, mem->slot[i].size);
        if (gmem_add(&copy, mem->slot[i].gpa, mem->slot[i].size, p, err) < 0)
            goto out;
    }
    struct lx_kernel *k = lx_kernel_new();
    if (!k) {
        hv_errk(err, HV_ERR_NO_MEMORY, "capture: out of memory");
        goto out;
    }
    int found = lx_vmcoreinfo_find(&copy, &k->vmci, err);
    if (found <= 0) {
        if (found == 0)
            hv_errf(err, "capture: no VMCOREINFO in guest memory");
        lx_kernel_free(k);
        goto out;
    }
    /* A kernel before 6.0: the layer searches its image for the kallsyms tables, reading tens
     * of MiB that the capture need not hold. Found once here, unwatched, the search below
     * starts at the tables' page; on the capture it reads zeros up to there. */
    struct lx_kallsyms_loc named;
    if (!lx_kallsyms_loc_from_vmcoreinfo(&k->vmci, &named)) {
        struct hv_err ignored;
        if (lx_kernel_describe(k, &copy, &ignored) == 1)
            k->kallsyms_scan_from = k->ks_loc.token_table & ~(uint64_t)(PAGE - 1);
    }
    /* From here on, only what the layer reads: the VMCOREINFO page itself, then every page
     * touched. */
    for (unsigned i = 0; i < cap.n; i++)
        if (k->vmci.gpa >= copy.slot[i].gpa && k->vmci.gpa - copy.slot[i].gpa < cap.size[i])
            cap.touched[i][(k->vmci.gpa - copy.slot[i].gpa) / PAGE] = 1;
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    for (unsigned i = 0; i < cap.n; i++)
        mprotect(cap.base[i], cap.size[i], PROT_NONE);
    read_all(k, &copy, log);
    sigaction(SIGSEGV, &old, NULL);
    for (unsigned i = 0; i < cap.n; i++)
        mprotect(cap.base[i], cap.size[i], PROT_READ);
    lx_kernel_free(k);
    uint64_t npages = 0;
    if (write_file(&copy, path, &npages, err) == 0) {
        fprintf(log, "capture: %" PRIu64 " pages (%.1f MiB) written to %s\n", npages,
                (double)npages * PAGE / 1048576.0, path);
        rc = 0;
    }
out:
    for (unsigned i = 0; i < cap.n; i++) {
        munmap(cap.base[i], cap.size[i]);
        free(cap.touched[i]);
    }
    memset(&cap, 0, sizeof(cap));
    return rc;
}
