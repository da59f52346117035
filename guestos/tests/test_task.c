/* The current task of a stopped vCPU, read as at an exit: a synthetic guest (guestwalk's test
 * image) with two CPUs' per-CPU areas and task_structs at kernel addresses, in the layout a
 * BTF would give, and the reader built from the kernel image's own nr_cpu_ids and
 * __per_cpu_offset[]. Covers the per-CPU base in kernel mode, before SWAPGS and in user mode,
 * a user task's own address space in kernel mode (task->mm->pgd) and after exit_mm(), kernel
 * threads, the idle tasks, a thread's process name from its group leader, and hostile values
 * (user-half task pointers, pids out of range, comm without NUL, unmapped tasks and mms). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/linux/task.h"
#include "guestwalk/tests/guest_image.h"

#define PERCPU0  0xffff888000100000ull /* __per_cpu_offset[0] */
#define PERCPU1  0xffff888000180000ull /* __per_cpu_offset[1] */
#define CURRENT  0x22d00ull            /* &current_task: a per-CPU offset, as in 6.1 */
#define TASKS    0xffff888000400000ull
#define TASK_SZ  0x2000ull
#define USER_GS  0x7f0000002000ull
#define IMAGE_PA (GIMG_RAM1_GPA + (6ull << 20)) /* where the kernel image "lies" */
#define NR_CPUS  (LX_START_KERNEL_MAP + 0x1000) /* image addresses of the two variables */
#define PCPU_OFF (LX_START_KERNEL_MAP + 0x2000)

static const struct lx_task_layout layout = {
    .known = true,
    .pid = 0x940, /* pid and tgid on the second page of the task, comm across the third */
    .tgid = 0x944,
    .flags = 0x2c,
    .mm = 0x8e0,
    .group_leader = 0x9a0,
    .comm = 0x1ff8,
    .comm_size = 16,
    .mm_pgd = 0x50,
};

#define MM     0xffff888000600000ull /* hv_threads' mm_struct */
#define MM_PGD 0xffff888000610000ull /* its mm->pgd: a page of the direct map */

struct fx {
    struct gimg g;
    struct gw_walker w;
    struct lx_kernel k;
    struct lx_task_reader *r;
    struct guestos_vcpu vc;
    char why[192];
};

static void put_task(struct fx *f, unsigned i, int32_t pid, int32_t tgid, uint32_t flags,
                     const char *comm, uint64_t leader, uint64_t mm)
{
    uint64_t t = TASKS + i * TASK_SZ;
    char c[16] = {0};
    memcpy(c, comm, strnlen(comm, 16));
    assert_int_equal(gimg_write(&f->g, t + layout.pid, &pid, 4), 0);
    assert_int_equal(gimg_write(&f->g, t + layout.tgid, &tgid, 4), 0);
    assert_int_equal(gimg_write(&f->g, t + layout.flags, &flags, 4), 0);
    assert_int_equal(gimg_write(&f->g, t + layout.comm, c, 16), 0);
    assert_int_equal(gimg_write_u64(&f->g, t + layout.group_leader, leader ? leader : t), 0);
    assert_int_equal(gimg_write_u64(&f->g, t + layout.mm, mm), 0);
}

/* The guest-physical address the test image gave a kernel page. */
static uint64_t gpa_of(struct fx *f, uint64_t va)
{
    struct gw_snapshot s = gimg_cpu(&f->g, 0, 0, 0, 0);
    gw_walker_begin(&f->w, &s);
    uint64_t gpa = 0;
    assert_int_equal(gw_translate(&f->w, va, false, &gpa, NULL), 0);
    return gpa;
}

static void set_current(struct fx *f, uint64_t percpu, uint64_t task)
{
    assert_int_equal(gimg_write_u64(&f->g, percpu + CURRENT, task), 0);
}

static void image_u64(struct fx *f, uint64_t va, uint64_t v)
{
    memcpy(gimg_host(&f->g, va - LX_START_KERNEL_MAP + IMAGE_PA), &v, 8);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(gimg_init(&f->g, false), 0);
    const uint64_t page = ~0xfffull;
    assert_int_equal(gimg_map_fresh(&f->g, (PERCPU0 + CURRENT) & page, 0x1000, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, (PERCPU1 + CURRENT) & page, 0x1000, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, TASKS, 9 * TASK_SZ, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, MM, 0x1000, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, MM_PGD, 0x1000, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_write_u64(&f->g, MM + layout.mm_pgd, MM_PGD), 0);
    struct hv_err err;
    if (gw_walker_init(&f->w, &f->g.mem, NULL, &err) < 0)
        fail_msg("%s", err.msg);

    /* The kernel as discovery leaves it: layout from BTF, symbols from kallsyms. */
    f->k.task = layout;
    f->k.sym.current_task = CURRENT;
    f->k.sym.nr_cpu_ids = NR_CPUS;
    f->k.sym.per_cpu_offset = PCPU_OFF;
    f->k.img = (struct lx_kimage){
        .mem = &f->g.mem, .phys_base = IMAGE_PA, .image_size = LX_KERNEL_IMAGE_MAX};
    image_u64(f, NR_CPUS, 2);
    image_u64(f, PCPU_OFF, PERCPU0);
    image_u64(f, PCPU_OFF + 8, PERCPU1);
    image_u64(f, PCPU_OFF + 16, 0xffffffff82000000ull); /* unused slot: __per_cpu_load */
    f->r = lx_task_reader_build(&f->k, f->why, sizeof(f->why));
    if (!f->r)
        fail_msg("reader: %s", f->why);
    guestos_vcpu_init(NULL, &f->vc);

    put_task(f, 0, 0, 0, LX_PF_KTHREAD, "swapper/1", 0, 0);
    put_task(f, 1, 812, 812, 0x400000, "hv_threads", 0, MM);
    put_task(f, 2, 813, 812, 0x400040, "worker-two", TASKS + 1 * TASK_SZ, MM);
    put_task(f, 3, 45, 45, LX_PF_KTHREAD | 0x40, "kworker/1:2", 0, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    free(f->r);
    gw_walker_fini(&f->w);
    gimg_free(&f->g);
    free(f);
    return 0;
}

/* A stop at CPL `cpl` with GS base `gs` (and IA32_KERNEL_GS_BASE `kgs` if non-zero). */
static struct guestos_ident stop(struct fx *f, uint8_t cpl, uint64_t gs, uint64_t kgs)
{
    struct gw_snapshot s = gimg_cpu(&f->g, 0, 0, 0, cpl);
    s.gs_base = gs;
    if (kgs) {
        s.kernel_gs_base = kgs;
        s.have |= GW_SNAP_MSRS;
    }
    gw_walker_begin(&f->w, &s);
    struct guestos_ident id = {.proc_key = 0x1234000, .as_root = 0x1234000, .thread_key = 0x99};
    lx_task_read(f->r, &f->vc, &f->w, &id);
    return id;
}

static void test_builder(void **state)
{
    struct fx *f = *state;
    assert_int_equal(f->r->ncpus, 2);
    assert_int_equal(f->r->current_ptr, CURRENT);
    uint32_t cpu = 9;
    assert_true(lx_task_cpu_of(f->r, PERCPU1, &cpu));
    assert_int_equal(cpu, 1);
    assert_true(lx_task_cpu_of(f->r, PERCPU0, &cpu));
    assert_int_equal(cpu, 0);
    assert_false(lx_task_cpu_of(f->r, 0xffffffff82000000ull, &cpu)); /* beyond nr_cpu_ids */
    assert_false(lx_task_cpu_of(f->r, USER_GS, &cpu));
    assert_string_equal(f->why, "current_task at per-CPU 0x22d00, 2 CPUs");
}

static void test_builder_refuses(void **state)
{
    struct fx *f = *state;
    char why[192];
    image_u64(f, NR_CPUS, 0);
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    assert_string_equal(why, "nr_cpu_ids unreadable or out of range");
    image_u64(f, NR_CPUS, LX_MAX_CPUS + 1);
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    image_u64(f, NR_CPUS, 2);
    image_u64(f, PCPU_OFF + 8, PERCPU0); /* two CPUs, one area */
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    assert_non_null(strstr(why, "share the per-CPU area"));
    image_u64(f, PCPU_OFF + 8, 0);
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    assert_string_equal(why, "__per_cpu_offset[1] unreadable or zero");
    f->k.sym.per_cpu_offset = LX_START_KERNEL_MAP + LX_KERNEL_IMAGE_MAX - 8; /* off the image */
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    /* 6.2-6.14 keep it in pcpu_hot, whose layout only BTF gives. */
    f->k.sym.current_task = 0;
    f->k.sym.pcpu_hot = 0x22c00;
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    assert_string_equal(why, "BTF: no pcpu_hot.current_task");
    f->k.sym.pcpu_hot = 0;
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    assert_string_equal(why, "neither current_task nor pcpu_hot in kallsyms");
    f->k.task.known = false;
    snprintf(f->k.btf_note, sizeof(f->k.btf_note), "no BTF");
    assert_null(lx_task_reader_build(&f->k, why, sizeof(why)));
    assert_string_equal(why, "no task_struct layout (no BTF)");
}

static void test_user_thread_in_kernel(void **state)
{
    struct fx *f = *state;
    set_current(f, PERCPU1, TASKS + 2 * TASK_SZ);
    struct guestos_ident id = stop(f, 0, PERCPU1, 0);
    assert_true(id.task.known);
    assert_false(id.task_unreadable);
    assert_false(id.task.kthread);
    assert_int_equal(id.task.pid, 812);
    assert_int_equal(id.task.tid, 813);
    assert_string_equal(id.task.comm, "worker-two");
    assert_string_equal(id.task.process, "hv_threads"); /* its group leader's name */
    assert_int_equal(id.thread_key, 813);
    /* In kernel mode a user task's process is its own address space, whatever CR3 holds. */
    assert_int_equal(id.proc_key, lx_process_key(812, gpa_of(f, MM_PGD)));
    assert_int_equal(id.as_root, gpa_of(f, MM_PGD));
    assert_int_equal(f->vc.percpu_base, PERCPU1);
    assert_int_equal(f->vc.cpu, 1);
    /* Past exit_mm() (mm NULL, CR3 init_mm's): its own process with no address space. */
    put_task(f, 2, 813, 812, 0x400044, "worker-two", TASKS + 1 * TASK_SZ, 0);
    id = stop(f, 0, PERCPU1, 0);
    assert_true(id.task.known);
    assert_int_equal(id.proc_key, GUESTOS_KEY_NOT_ROOT | 812);
    assert_int_equal(id.as_root, 0);
    /* An mm that cannot be read, or whose pgd is no page: not read at all. */
    put_task(f, 2, 813, 812, 0x400044, "worker-two", TASKS + 1 * TASK_SZ, MM + 0x100000);
    assert_false(stop(f, 0, PERCPU1, 0).task.known);
    assert_int_equal(gimg_write_u64(&f->g, MM + layout.mm_pgd, MM_PGD + 8), 0);
    put_task(f, 2, 813, 812, 0x400044, "worker-two", TASKS + 1 * TASK_SZ, MM);
    assert_false(stop(f, 0, PERCPU1, 0).task.known);
}

static void test_user_mode_uses_the_vcpus_area(void **state)
{
    struct fx *f = *state;
    set_current(f, PERCPU1, TASKS + 1 * TASK_SZ);
    /* User mode: GS base is the user's; nothing known about this vCPU yet. */
    struct guestos_ident id = stop(f, 3, USER_GS, 0);
    assert_false(id.task.known);
    assert_true(id.task_unreadable);
    assert_int_equal(id.thread_key, 0x99); /* the generic identity stands */
    /* IA32_KERNEL_GS_BASE, when read, tells it. */
    id = stop(f, 3, USER_GS, PERCPU1);
    assert_true(id.task.known);
    assert_int_equal(id.task.tid, 812);
    /* User mode: the address space CR3 holds, with the tgid (a root page reused by another
     * process is another process). */
    assert_int_equal(id.proc_key, lx_process_key(812, 0x1234000));
    assert_int_not_equal(lx_process_key(812, 0x1234000), lx_process_key(813, 0x1234000));
    assert_int_equal(id.as_root, 0x1234000);
    assert_string_equal(id.task.process, "hv_threads");
    /* From now on this vCPU is CPU 1: user mode without the MSR, and the entry code before
     * SWAPGS (kernel mode, user GS base), both read CPU 1's current task. */
    id = stop(f, 3, USER_GS, 0);
    assert_int_equal(id.task.tid, 812);
    id = stop(f, 0, 0, 0);
    assert_int_equal(id.task.tid, 812);
    /* A kernel-mode GS base that is no CPU's does not replace the known one. */
    id = stop(f, 0, 0xffff888000140000ull, 0);
    assert_int_equal(id.task.tid, 812);
    assert_int_equal(f->vc.percpu_base, PERCPU1);
}

/* The first user-mode stop after the kernel was described, without the MSR: the GS base of the
 * vCPU's last kernel-mode stop before then is the candidate, used only if it is a CPU's. */
static void test_user_mode_first_after_discovery(void **state)
{
    struct fx *f = *state;
    set_current(f, PERCPU1, TASKS + 1 * TASK_SZ);
    f->vc.kernel_gs_seen = 0xffff888000140000ull; /* no CPU's area: not used */
    struct guestos_ident id = stop(f, 3, USER_GS, 0);
    assert_true(id.task_unreadable);
    assert_int_equal(f->vc.percpu_base, 0);
    f->vc.kernel_gs_seen = PERCPU1;
    id = stop(f, 3, USER_GS, 0);
    assert_true(id.task.known);
    assert_int_equal(id.task.tid, 812);
    assert_int_equal(f->vc.percpu_base, PERCPU1);
    assert_int_equal(f->vc.cpu, 1);
}

/* The Linux layer before its kernel is described: kernel-mode stops are the boot's, until a
 * stop in user mode shows the guest is past it; then the generic identity stands. */
static void test_boot_identity(void **state)
{
    struct fx *f = *state;
    struct guestos os;
    struct hv_err err;
    if (guestos_open(&os, "linux", &err) < 0)
        fail_msg("%s", err.msg);
    struct guestos_vcpu vc;
    guestos_vcpu_init(&os, &vc);
    vc.vcpu = 1;
    struct gw_snapshot s = gimg_cpu(&f->g, 0, 0, 0, 0);
    struct guestos_ident id;
    guestos_identify(&os, &vc, &f->w, &s, &id);
    assert_true(id.task.known);
    assert_false(id.task_unreadable);
    assert_int_equal(id.task.pid, 0);
    assert_string_equal(id.task.process, "[boot]");
    assert_string_equal(id.task.comm, "swapper/1");
    assert_int_equal(id.proc_key, LX_BOOT_PROCESS_KEY);
    assert_int_equal(id.as_root, 0);
    struct gw_snapshot u = gimg_cpu(&f->g, 0, 0, 0, 3);
    guestos_identify(&os, &vc, &f->w, &u, &id);
    assert_false(id.task.known);
    guestos_identify(&os, &vc, &f->w, &s, &id);
    assert_false(id.task.known); /* past the boot: no longer the boot's */
    assert_int_not_equal(id.proc_key, LX_BOOT_PROCESS_KEY);
    guestos_close(&os);
}

static void test_kernel_thread_and_idle(void **state)
{
    struct fx *f = *state;
    set_current(f, PERCPU0, TASKS + 3 * TASK_SZ);
    struct guestos_ident id = stop(f, 0, PERCPU0, 0);
    assert_true(id.task.kthread);
    assert_string_equal(id.task.comm, "kworker/1:2");
    assert_string_equal(id.task.process, "kworker/1:2");
    assert_int_equal(id.proc_key, GUESTOS_KEY_NOT_ROOT | 45); /* its own process */
    assert_int_equal(id.as_root, 0);                          /* no user address space */
    assert_int_equal(id.thread_key, 45);

    set_current(f, PERCPU1, TASKS);
    id = stop(f, 0, PERCPU1, 0);
    assert_true(id.task.kthread);
    assert_int_equal(id.task.pid, 0);
    assert_string_equal(id.task.comm, "swapper/1");
    assert_string_equal(id.task.process, "swapper");
    assert_int_equal(id.proc_key, GUESTOS_KEY_NOT_ROOT);
    assert_int_equal(id.thread_key, (1ull << 40) | 1); /* one idle thread per CPU */
}

static void test_hostile_values(void **state)
{
    struct fx *f = *state;
    /* A task pointer into user space, a misaligned one, one into unmapped memory. */
    const uint64_t bad[] = {0x7f0000000000ull, TASKS + 4, 0xffff888040000000ull, 0};
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        set_current(f, PERCPU0, bad[i]);
        struct guestos_ident id = stop(f, 0, PERCPU0, 0);
        assert_false(id.task.known);
        assert_true(id.task_unreadable);
        assert_int_equal(id.proc_key, 0x1234000);
    }
    /* pid and tgid out of range. */
    put_task(f, 4, -5, 10, 0, "x", 0, MM);
    put_task(f, 5, 10, LX_PID_MAX_LIMIT + 1, 0, "x", 0, MM);
    for (unsigned i = 4; i <= 5; i++) {
        set_current(f, PERCPU0, TASKS + i * TASK_SZ);
        assert_false(stop(f, 0, PERCPU0, 0).task.known);
    }
    /* A comm with no NUL and control bytes comes out cut and printable. */
    put_task(f, 6, 70, 70, 0, "", 0, MM);
    char comm[16];
    memset(comm, 'A', sizeof(comm));
    comm[2] = '\n';
    comm[3] = (char)0xe9;
    assert_int_equal(gimg_write(&f->g, TASKS + 6 * TASK_SZ + layout.comm, comm, 16), 0);
    set_current(f, PERCPU0, TASKS + 6 * TASK_SZ);
    struct guestos_ident id = stop(f, 0, PERCPU0, 0);
    assert_true(id.task.known);
    assert_string_equal(id.task.comm, "AA??AAAAAAAAAAA");
    /* A thread whose group leader cannot be read still has its own name. */
    put_task(f, 7, 90, 80, 0, "lonely", 0x10, MM);
    set_current(f, PERCPU0, TASKS + 7 * TASK_SZ);
    id = stop(f, 0, PERCPU0, 0);
    assert_true(id.task.known);
    assert_string_equal(id.task.comm, "lonely");
    assert_string_equal(id.task.process, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_builder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builder_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_thread_in_kernel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_mode_uses_the_vcpus_area, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_mode_first_after_discovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_thread_and_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_boot_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_values, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
