/* The Linux layer on memory captured from real Debian guests (guestos/tests/data/, made by
 * tests/linux/capture.sh on the test bed: docs/linux-introspection.md, "Captured guests"). Only
 * the pages the layer read at capture time are stored; everything else reads as zeros. For each
 * capture the layer must find the kernel from a scan of the sparse image as it would in a live
 * guest, and agree exactly with what the guest printed about itself on its console: its
 * release, the run-time addresses of its kernel symbols (KASLR applied), its loaded module brd
 * and that module's symbols; read the task the guest was running when it stopped: pid 1,
 * which l2_init.sh replaced with `reboot` (exec); and read the executable its processes run
 * (busybox) whole from the guest's page cache, byte for byte the file the guest summed. */
#include <dirent.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/tests/capture_load.h"
#include "guestos/linux/cgroup.h"
#include "guestos/linux/kernel.h"
#include "guestos/linux/kmodules.h"
#include "guestos/linux/orc_load.h"
#include "guestos/linux/process.h"
#include "guestos/linux/switched.h"
#include "guestos/linux/task.h"
#include "guestos/linux/threads.h"
#include "tests/tools/capture/exe_files.h"

#define MAX_SYMS 64

struct expected {
    char release[65];
    struct {
        uint64_t addr;
        char name[64];
    } ksym[MAX_SYMS], kmodsym[MAX_SYMS];
    unsigned nksym, nkmodsym;
    char kmod[32];
    /* Sleeping tasks' kernel stacks as /proc/PID/stack printed them: "func+0xoff/0xsize". */
    struct {
        int pid;
        char comm[17];
        unsigned n;
        struct {
            char name[64];
            uint64_t off;
        } f[32];
        char state;           /* /proc/PID/stat's letter */
        uint64_t user_sp, pc; /* /proc/PID/syscall's last two fields (0 for a kernel thread) */
    } stack[4];
    unsigned nstack;
    /* The executable as the guest saw it: stat's inode and size, busybox crc32's sum. */
    unsigned long long file_ino, file_size;
    unsigned file_crc;
};

static void load_expected(const char *path, struct expected *e)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: cannot open", path);
    memset(e, 0, sizeof(*e));
    char line[512], name[64], status[16];
    unsigned long long addr;
    while (fgets(line, sizeof(line), f)) {
        const char *r = strstr(line, "release=");
        if (!strncmp(line, "HVTEST userspace ", 17) && r)
            sscanf(r + 8, "%64s", e->release);
        else if (sscanf(line, "HVTEST ksym %llx %*c %63s", &addr, name) == 2 &&
                 e->nksym < MAX_SYMS) {
            e->ksym[e->nksym].addr = addr;
            snprintf(e->ksym[e->nksym++].name, sizeof(name), "%s", name);
        } else if (sscanf(line, "HVTEST kmodsym %llx %*c %63s", &addr, name) == 2 &&
                   e->nkmodsym < MAX_SYMS) {
            e->kmodsym[e->nkmodsym].addr = addr;
            snprintf(e->kmodsym[e->nkmodsym++].name, sizeof(name), "%s", name);
        } else if (!strncmp(line, "HVTEST kstack ", 14) && e->nstack < 4 &&
                   sscanf(line + 14, "%d %16s", &e->stack[e->nstack].pid,
                          e->stack[e->nstack].comm) == 2) {
            e->nstack++;
        } else if (!strncmp(line, "HVTEST kframe ", 14) && e->nstack > 0) {
            int pid;
            unsigned long long off;
            char fn[64];
            __typeof__(e->stack[0]) *s = &e->stack[e->nstack - 1];
            if (sscanf(line + 14, "%d %63[^+]+0x%llx", &pid, fn, &off) == 3 && pid == s->pid &&
                s->n < 32) {
                snprintf(s->f[s->n].name, sizeof(s->f[0].name), "%s", fn);
                s->f[s->n++].off = off;
            }
        } else if (!strncmp(line, "HVTEST kstate ", 14) && e->nstack > 0) {
            int pid;
            char st;
            if (sscanf(line + 14, "%d %c", &pid, &st) == 2 && pid == e->stack[e->nstack - 1].pid)
                e->stack[e->nstack - 1].state = st;
        } else if (!strncmp(line, "HVTEST ksyscall ", 16) && e->nstack > 0) {
            /* "PID NR ARG1..ARG6 SP PC" */
            int pid;
            unsigned long long v[9];
            if (sscanf(line + 16, "%d %llx %llx %llx %llx %llx %llx %llx %llx %llx", &pid, &v[0],
                       &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) == 10 &&
                pid == e->stack[e->nstack - 1].pid) {
                e->stack[e->nstack - 1].user_sp = v[7];
                e->stack[e->nstack - 1].pc = v[8];
            }
        } else if (sscanf(line, "HVTEST file %*s ino=%llu size=%llu crc32=%x", &e->file_ino,
                          &e->file_size, &e->file_crc) == 3) {
        } else if (!strncmp(line, "HVTEST kmod ", 12) &&
                   sscanf(line + 12, "%31s %15s", e->kmod, status) == 2 && strcmp(status, "loaded"))
            e->kmod[0] = 0;
    }
    fclose(f);
}

/* Static functions can share a name (io_serial_in twice in 6.1): the one at `addr`. */
static bool has_ksym(const struct lx_kernel *k, const char *name, uint64_t addr)
{
    for (size_t i = 0; i < k->syms.n; i++)
        if (k->syms.v[i].type && k->syms.v[i].addr == addr &&
            !strcmp(lx_ksym_name(k, &k->syms.v[i]), name))
            return true;
    return false;
}

struct named_syms {
    unsigned n;
    uint64_t addr[256];
    char name[256][64];
};

static int collect(void *ctx, uint64_t addr, char type, const char *name, size_t len)
{
    (void)type;
    struct named_syms *s = ctx;
    if (s->n < 256 && len < 64) {
        s->addr[s->n] = addr;
        memcpy(s->name[s->n], name, len);
        s->name[s->n][len] = 0;
        s->n++;
    }
    return 0;
}

/* The code symbol containing addr: the last at or below it (k->syms.v is in address order). */
static const struct lx_ksym *ksym_at(const struct lx_kernel *k, uint64_t addr)
{
    size_t lo = 0, hi = k->syms.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->syms.v[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && k->syms.v[lo - 1].type ? &k->syms.v[lo - 1] : NULL;
}

/* Each sleeping task the guest listed, unwound with the kernel's ORC tables from where it was
 * switched out: the guest's own /proc/PID/stack must be our walk's outer frames exactly (name
 * and offset of every return address); the kernel leaves out only the frames in its scheduling
 * text at the top (stack_trace_consume_entry_nosched), from __schedule where the task switched,
 * a few frames that must be all that ours has before them. */
static void check_stacks(const char *capture, const struct lx_kernel *k, const struct gmem *mem,
                         struct gw_walker *w, const struct expected *e)
{
    char why[192];
    struct lx_orc *orc = lx_orc_load(k, why, sizeof(why));
    if (!orc)
        fail_msg("%s: %s", capture, why);
    assert_true(orc->layout.how[0] == 'B'); /* from BTF's struct orc_entry */
    struct lx_proc_layout pl;
    struct lx_switch_layout sl;
    struct lx_kread kr;
    if (!lx_proc_layout_of(k, &pl, why, sizeof(why)) ||
        !lx_switch_layout_of(k, &sl, why, sizeof(why)) ||
        lx_kread_init_kernel(&kr, k, mem, why, sizeof(why)) < 0)
        fail_msg("%s: %s", capture, why);
    if (e->nstack < 3)
        fail_msg("%s: the guest listed %u sleeping tasks' stacks", capture, e->nstack);
    for (unsigned i = 0; i < e->nstack; i++) {
        const __typeof__(e->stack[0]) *want = &e->stack[i];
        uint64_t task = lx_task_of_pid(&kr, &k->task, &pl, k->sym.init_task, want->pid);
        struct gw_regs r;
        if (!task || !lx_task_switched_regs(&kr, &sl, task, &r))
            fail_msg("%s: task %d not found or not switched out", capture, want->pid);
        uint64_t pc[64];
        struct gw_stack st = GW_STACK_INIT(pc, 64);
        lx_orc_unwind(orc, w, &r, &st);
        char got[2048] = "";
        size_t used = 0;
        for (unsigned j = 0; j < st.count && used < sizeof(got) - 96; j++) {
            const struct lx_ksym *s = ksym_at(k, pc[j] - 1);
            used += (size_t)snprintf(got + used, sizeof(got) - used, " %s+0x%" PRIx64,
                                     s ? lx_ksym_name(k, s) : "?", s ? pc[j] - s->addr : 0);
        }
        if (st.stop != GW_STOP_CHAIN_END || st.count < want->n || want->n < 2)
            fail_msg("%s: task %d %s: %u frames, %s (the guest lists %u):%s", capture, want->pid,
                     want->comm, st.count, gw_stop_reason_str(st.stop), want->n, got);
        unsigned skip = st.count - want->n;
        for (unsigned j = 0; j < st.count; j++) {
            const struct lx_ksym *s = ksym_at(k, pc[j] - 1);
            const char *name = s ? lx_ksym_name(k, s) : "?";
            if (j < skip) {
                /* The switch happened in __schedule; the kernel leaves out what lies in its
                 * scheduling text (__sched: schedule, do_nanosleep, ...), a few frames. */
                if ((j == 0 && strcmp(name, "__schedule")) || skip > 4)
                    fail_msg("%s: task %d: %u frames before the guest's, from %s:%s", capture,
                             want->pid, skip, name, got);
                continue;
            }
            if (strcmp(name, want->f[j - skip].name) || pc[j] - s->addr != want->f[j - skip].off)
                fail_msg("%s: task %d: frame %u is %s+0x%" PRIx64 ", the guest says %s+0x%" PRIx64
                         ":%s",
                         capture, want->pid, j, name, s ? pc[j] - s->addr : 0,
                         want->f[j - skip].name, want->f[j - skip].off, got);
        }
        /* User tasks end at their system call's entry frame, kernel threads at ret_from_fork. */
        bool kthread = want->pid == 2;
        assert_int_equal(st.user_entry, !kthread);
        if (!kthread)
            assert_true(st.user_regs.rip && (st.user_regs.rip >> 47) == 0);
        print_message("%s: task %d %s: %u frames, the guest's %u exact%s:%s\n", capture, want->pid,
                      want->comm, st.count, want->n, st.user_entry ? ", user entry" : "", got);
    }
    lx_orc_free(orc);
}

/* Every thread as an off-CPU visit lists it (threads.h): the sleeping tasks the guest listed
 * are there with the state its /proc/PID/stat gave, and a user task's registers at kernel entry
 * (the pt_regs at the top of its stack) are the user stack pointer and PC its /proc/PID/syscall
 * gave. */
struct found_threads {
    struct guestos_thread t[512];
    unsigned n;
};

static int keep_thread(void *ctx, const struct guestos_thread *t)
{
    struct found_threads *f = ctx;
    if (f->n < 512)
        f->t[f->n++] = *t;
    return 0;
}

static void check_threads(const char *capture, const struct lx_kernel *k, const struct gmem *mem,
                          const struct expected *e)
{
    static const char letters[] = "RSDTtXZPI";
    char why[192];
    struct lx_proc_layout pl;
    struct lx_switch_layout sl;
    struct lx_kread kr;
    struct lx_threads t;
    if (!lx_proc_layout_of(k, &pl, why, sizeof(why)) ||
        lx_kread_init_kernel(&kr, k, mem, why, sizeof(why)) < 0 ||
        !lx_threads_init(&t, k, &kr, &pl, &sl, why, sizeof(why)))
        fail_msg("%s: threads: %s", capture, why);
    assert_true(sl.known);
    static struct found_threads f;
    f.n = 0;
    long n = lx_threads_each(&t, keep_thread, &f, 512, why, sizeof(why));
    if (n < 20)
        fail_msg("%s: %ld threads listed (%s)", capture, n, n < 0 ? why : "too few");
    for (unsigned i = 0; i < e->nstack; i++) {
        const __typeof__(e->stack[0]) *want = &e->stack[i];
        const struct guestos_thread *th = NULL;
        for (unsigned j = 0; j < f.n && !th; j++)
            if (f.t[j].task.tid == want->pid)
                th = &f.t[j];
        if (!th)
            fail_msg("%s: task %d %s is not among the %ld threads", capture, want->pid, want->comm,
                     n);
        if (!want->state || letters[th->state] != want->state)
            fail_msg("%s: task %d: state %c, the guest says %c", capture, want->pid,
                     letters[th->state], want->state ? want->state : '?');
        assert_string_equal(th->task.comm, want->comm);
        assert_false(th->on_cpu);
        struct gw_regs kregs, uregs;
        assert_true(lx_thread_regs(&t, th, &kregs, &uregs));
        if (!want->pc) {
            assert_false(uregs.user); /* a kernel thread */
            continue;
        }
        if (!uregs.user || uregs.rip != want->pc || uregs.rsp != want->user_sp)
            fail_msg("%s: task %d: user pc 0x%" PRIx64 " sp 0x%" PRIx64
                     ", the guest says pc 0x%" PRIx64 " sp 0x%" PRIx64,
                     capture, want->pid, uregs.rip, uregs.rsp, want->pc, want->user_sp);
        print_message("%s: thread %d %s: state %c, user pc 0x%" PRIx64 " sp 0x%" PRIx64
                      " as /proc/%d/syscall says; %ld threads\n",
                      capture, want->pid, want->comm, want->state, uregs.rip, uregs.rsp, want->pid,
                      n);
    }
}

static void check_one(const char *capture, const char *expected_path)
{
    struct expected e;
    load_expected(expected_path, &e);
    if (!e.release[0] || e.nksym < 4 || !e.kmod[0] || e.nkmodsym < 4)
        fail_msg("%s: the guest's account is incomplete", expected_path);
    struct captured c;
    struct hv_err lerr = {0};
    if (capture_load(capture, &c, &lerr) < 0)
        fail_msg("%s", lerr.msg);

    /* The kernel, found from a scan of the image as in a live guest. */
    struct lx_kernel *k = lx_kernel_new();
    struct hv_err err = {0};
    int rc = lx_kernel_discover(k, &c.mem, &err);
    if (rc != 1)
        fail_msg("%s: discovery: %d %s", capture, rc, err.msg);
    assert_string_equal(k->vmci.osrelease, e.release);
    for (unsigned i = 0; i < e.nksym; i++) {
        if (!has_ksym(k, e.ksym[i].name, e.ksym[i].addr))
            fail_msg("%s: the guest's %s at 0x%" PRIx64 " is not read", capture, e.ksym[i].name,
                     e.ksym[i].addr);
    }
    assert_true(k->task.known); /* BTF gave the layout, checked on init_task */
    /* The kernel's record of a panic (a data symbol: CONFIG_KALLSYMS_ALL, as Debian builds). */
    if (k->sym.panic_cpu < LX_START_KERNEL_MAP)
        fail_msg("%s: panic_cpu at 0x%" PRIx64 ", not in the kernel image", capture,
                 k->sym.panic_cpu);

    /* The task the guest ran when it stopped: pid 1 as `reboot`, on CPU 0 (one vCPU). */
    char why[192];
    struct lx_task_reader *r = lx_task_reader_build(k, why, sizeof(why));
    if (!r)
        fail_msg("%s: task reader: %s", capture, why);
    uint64_t pgt = 0;
    int64_t l5 = 0;
    assert_true(lx_vmcoreinfo_symbol(&k->vmci, "init_top_pgt", &pgt));
    (void)lx_vmcoreinfo_decimal(&k->vmci, "NUMBER(pgtable_l5_enabled)", &l5);
    struct gw_walker w;
    if (gw_walker_init(&w, &c.mem, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    struct gw_snapshot snap = {.cr0 = 0x80000011,
                               .cr3 = pgt - LX_START_KERNEL_MAP + k->img.phys_base,
                               .cr4 = 0x20 | (l5 == 1 ? 0x1000 : 0),
                               .efer = 0xd01,
                               .cpl = 0,
                               .gs_base = r->cpus[0].base};
    gw_walker_begin(&w, &snap);
    struct guestos_vcpu vc;
    guestos_vcpu_init(NULL, &vc);
    struct guestos_ident id = {0};
    lx_task_read(r, &vc, &w, &id);
    assert_true(id.task.known);
    assert_false(id.task.kthread);
    assert_int_equal(id.task.pid, 1);
    assert_int_equal(id.task.tid, 1);
    assert_string_equal(id.task.comm, "reboot");
    assert_int_equal(vc.cpu, 0);
    /* The cgroup and namespace members from this kernel's BTF (docs/containers.md): the
     * offsets find pid 1's css_set and struct pid, kernel pointers both. */
    uint64_t task = 0, css = 0, tpid = 0;
    assert_true(gw_read_virt(&w, r->cpus[0].base + r->current_ptr, &task, 8, false, NULL) == 0);
    struct lx_cgroup_layout cl;
    if (!lx_cgroup_layout_of(k, &cl, why, sizeof(why)) || !cl.ns_known)
        fail_msg("%s: cgroup layout: %s", capture, why);
    struct lx_kread kr;
    if (lx_kread_init_kernel(&kr, k, &c.mem, why, sizeof(why)) < 0)
        fail_msg("%s: kread: %s", capture, why);
    if (!lx_task_css_set(&kr, &cl, task, &css) ||
        !lx_kread(&kr, task + cl.task_thread_pid, &tpid, 8) || tpid < 0xff00000000000000ull)
        fail_msg("%s: pid 1's css_set 0x%" PRIx64 " or struct pid 0x%" PRIx64
                 " is no kernel pointer (%s)",
                 capture, css, tpid, why);
    /* The UTS and mount namespace members too (the capture holds only the pages its other
     * checks read, so pid 1's nsproxy may not be in it). */
    if (!cl.uts_known)
        fail_msg("%s: BTF: no task_struct.nsproxy, nsproxy.uts_ns/mnt_ns, "
                 "uts_namespace.name.nodename or mnt_namespace.ns.inum",
                 capture);
    char host[LX_UTS_NODENAME_LEN] = "";
    uint32_t mnt = 0;
    bool uts = lx_task_uts(&kr, &cl, task, host, &mnt);
    print_message("%s: %s; uts_namespace.name.nodename@%" PRIu64 ", pid 1's hostname %s\n", capture,
                  why, cl.uts_nodename, uts ? host : "(not in the capture)");
    check_stacks(capture, k, &c.mem, &w, &e);
    check_threads(capture, k, &c.mem, &e);
    gw_walker_fini(&w);
    free(r);

    /* The module the guest loaded, and each of its symbols the guest listed. */
    struct lx_kmods km;
    if (lx_kmods_init(&km, k, &c.mem, why, sizeof(why)) < 0)
        fail_msg("%s: modules: %s", capture, why);
    struct lx_kmod m[16];
    int n = lx_kmods_list(&km, m, 16, &err);
    assert_true(n >= 1);
    int at = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(m[i].name, e.kmod))
            at = i;
    if (at < 0)
        fail_msg("%s: module %s not listed", capture, e.kmod);
    static struct named_syms got;
    memset(&got, 0, sizeof(got));
    assert_true(lx_kmods_symbols(&km, &m[at], collect, &got, &err) >= (long)e.nkmodsym);
    for (unsigned i = 0; i < e.nkmodsym; i++) {
        bool found = false;
        for (unsigned j = 0; j < got.n && !found; j++)
            found = got.addr[j] == e.kmodsym[i].addr && !strcmp(got.name[j], e.kmodsym[i].name);
        if (!found)
            fail_msg("%s: module %s: the guest's %s at 0x%" PRIx64 " not read", capture, e.kmod,
                     e.kmodsym[i].name, e.kmodsym[i].addr);
    }

    /* The executable, whole from the page cache (an initramfs: every page of it is cached). */
    if (!e.file_ino)
        fail_msg("%s: no HVTEST file line: recapture (tests/linux/capture.sh)", expected_path);
    struct exe_file ef[EXE_FILES_MAX];
    int nf = exe_files_read(k, &c.mem, ef, why, sizeof(why));
    if (nf < 0)
        fail_msg("%s: executables: %s", capture, why);
    int fi = -1;
    for (int i = 0; i < nf; i++)
        if (ef[i].ino == e.file_ino)
            fi = i;
    if (fi < 0)
        fail_msg("%s: no process runs inode %llu", capture, e.file_ino);
    assert_int_equal(ef[fi].size, e.file_size);
    assert_int_equal(ef[fi].cached, ef[fi].pages);
    assert_int_equal(ef[fi].crc32, e.file_crc);
    print_message("%s: Linux %s, %zu code symbols, %u guest symbols and %u of %s's match; "
                  "pid 1 \"reboot\" on CPU 0; its executable's %" PRIu64 " pages from the page "
                  "cache, crc32 %08x as the guest's; %u captured pages\n",
                  capture, k->vmci.osrelease, k->syms.n, e.nksym, e.nkmodsym, e.kmod, ef[fi].pages,
                  ef[fi].crc32, c.npages);
    lx_kernel_free(k);
    capture_free(&c);
}

static void test_captured_guests(void **state)
{
    (void)state;
    DIR *d = opendir(CAPTURE_DIR);
    if (!d)
        fail_msg("%s: no captured guests", CAPTURE_DIR);
    unsigned checked = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        const char *suffix = ".capture.gz";
        if (len <= strlen(suffix) || strcmp(de->d_name + len - strlen(suffix), suffix))
            continue;
        char capture[1024], expected[1024];
        snprintf(capture, sizeof(capture), "%s/%s", CAPTURE_DIR, de->d_name);
        snprintf(expected, sizeof(expected), "%s/%.*s.expected", CAPTURE_DIR,
                 (int)(len - strlen(suffix)), de->d_name);
        check_one(capture, expected);
        checked++;
    }
    closedir(d);
    assert_true(checked >= 2); /* Debian's generic and cloud kernels */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_captured_guests)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
