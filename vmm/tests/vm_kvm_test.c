/* Real-KVM tests (label `integration`): tiny hand-assembled 64-bit guests booted through the VM
 * API with 1 and 2 vCPUs; asserts console bytes, stop reasons and statuses. Skips without
 * /dev/kvm. Encodings were produced with GNU as (source in the comments). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/need_kvm.h"
#include "vmm/tests/tiny_guest.h"
#include "vmm/tests/virtq_driver.h"

/* mov $0x3f8,%dx; mov $'h',%al; out %al,%dx; mov $'i',%al; out; mov $'\n',%al; out;
 * mov $0xf4,%dx; mov $0x12a,%eax; out %eax,%dx; 1: hlt; jmp 1b */
static const uint8_t g_hello[] = {0x66, 0xba, 0xf8, 0x03, 0xb0, 0x68, 0xee, 0xb0, 0x69,
                                  0xee, 0xb0, 0x0a, 0xee, 0x66, 0xba, 0xf4, 0x00, 0xb8,
                                  0x2a, 0x01, 0x00, 0x00, 0xef, 0xf4, 0xeb, 0xfd};
/* lea msg(%rip),%rsi; mov $6,%ecx; mov $0x3f8,%dx; rep outsb; mov $0xf4,%dx; mov $7,%eax;
 * out %eax,%dx; hlt; msg: "rep ok" */
static const uint8_t g_rep_outsb[] = {0x48, 0x8d, 0x35, 0x16, 0x00, 0x00, 0x00, 0xb9, 0x06,
                                      0x00, 0x00, 0x00, 0x66, 0xba, 0xf8, 0x03, 0xf3, 0x6e,
                                      0x66, 0xba, 0xf4, 0x00, 0xb8, 0x07, 0x00, 0x00, 0x00,
                                      0xef, 0xf4, 'r',  'e',  'p',  ' ',  'o',  'k'};
/* cli; 1: hlt; jmp 1b */
static const uint8_t g_idle[] = {0xfa, 0xf4, 0xeb, 0xfd};
/* 1: jmp 1b */
static const uint8_t g_spin[] = {0xeb, 0xfe};
/* ud2 (no IDT: #UD -> #GP -> #DF -> triple fault) */
static const uint8_t g_ud2[] = {0x0f, 0x0b};
/* mov $0xfe,%al; out %al,$0x64; hlt */
static const uint8_t g_reset[] = {0xb0, 0xfe, 0xe6, 0x64, 0xf4};
/* mov $0x2f8,%dx; in %dx,%al; mov %al,%bl; in $0x92,%al; xor %bl,%al; mov $0xf4,%dx;
 * out %eax,%dx; hlt   -> status = 0xff (unclaimed port) ^ 0x02 (port 0x92) = 0xfd */
static const uint8_t g_inports[] = {0x66, 0xba, 0xf8, 0x02, 0xec, 0x88, 0xc3, 0xe4, 0x92,
                                    0x30, 0xd8, 0x66, 0xba, 0xf4, 0x00, 0xef, 0xf4};

/* A disk's register access as a vCPU's MMIO exit makes it. */
static uint32_t disk_rd(struct vm *vm, uint32_t off)
{
    uint32_t v;
    assert_true(vm_disks_mmio(&vm->disks, VM_DISK_MMIO_BASE + off, (uint8_t *)&v, 4, false));
    return v;
}

static void disk_wr(struct vm *vm, uint32_t off, uint32_t v)
{
    assert_true(vm_disks_mmio(&vm->disks, VM_DISK_MMIO_BASE + off, (uint8_t *)&v, 4, true));
}

/* The disk's I/O thread: KVM takes the ioeventfd for QueueNotify (KVM_IOEVENTFD accepted), and
 * a signal on that eventfd, what KVM does when the guest writes 0 there, has the thread serve
 * the request and raise the interrupt while no vCPU runs. (The whole path with a real driver:
 * the Linux test bed's disk runs, docs/virtio.md.) */
static void test_disk_io_thread(void **state)
{
    (void)state;
    char path[] = "/tmp/hvprof-iothread-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    uint8_t sector[512];
    for (unsigned s = 0; s < 8; s++) {
        memset(sector, 0x40 + s, sizeof(sector));
        assert_int_equal(write(fd, sector, sizeof(sector)), sizeof(sector));
    }
    close(fd);
    struct vm_disk disk = {.path = path, .mode = VIRTIO_BLK_RW};
    struct vm_config base = {.disks = &disk, .ndisks = 1};
    struct vm *vm = tiny_vm(1, -1, g_idle, sizeof(g_idle), &base);
    assert_string_equal(vm->disks.served, "on an I/O thread per disk (ioeventfd)");
    uint8_t *ram = gmem_ptr(vm_gmem(vm), 0x200000, 0x40000);
    assert_non_null(ram);
    enum {
        DESC = 0x200000,
        AVAIL = 0x201000,
        USED = 0x202000,
        HDR = 0x203000,
        STAT = 0x203100,
        DATA = 0x204000
    };
    struct vq_driver d = {ram - 0x200000, DESC, AVAIL, USED, 16, 0};
    /* Linux's probe (3.1.1), queue 0 of 16 entries, DRIVER_OK. */
    disk_wr(vm, 0x070, 0);
    disk_wr(vm, 0x070, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
    disk_wr(vm, 0x024, 1);
    disk_wr(vm, 0x020, 1); /* VIRTIO_F_VERSION_1: bit 32 */
    disk_wr(vm, 0x070,
            VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK);
    disk_wr(vm, 0x030, 0);
    disk_wr(vm, 0x038, 16);
    disk_wr(vm, 0x080, DESC);
    disk_wr(vm, 0x090, AVAIL);
    disk_wr(vm, 0x0a0, USED);
    disk_wr(vm, 0x044, 1);
    disk_wr(vm, 0x070, disk_rd(vm, 0x070) | VIRTIO_STATUS_DRIVER_OK);
    assert_true(disk_rd(vm, 0x070) & VIRTIO_STATUS_DRIVER_OK);
    /* IN, sector 5. */
    uint64_t sector5 = 5;
    memset(d.ram + HDR, 0, 16);
    memcpy(d.ram + HDR + 8, &sector5, 8);
    vqd_desc(&d, DESC, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
    vqd_desc(&d, DESC, 1, DATA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
    vqd_desc(&d, DESC, 2, STAT, 1, VIRTQ_DESC_F_WRITE, 0);
    vqd_publish(&d, 0);
    uint64_t one = 1;
    assert_int_equal(write(vm->disks.v[0].kick_fd, &one, 8), 8);
    for (int i = 0; i < 5000 && vqd_used_idx(&d) == 0; i++)
        usleep(1000);
    assert_int_equal(vqd_used_idx(&d), 1);
    assert_int_equal(d.ram[STAT], VIRTIO_BLK_S_OK);
    assert_int_equal(d.ram[DATA], 0x45);
    assert_int_equal(d.ram[DATA + 511], 0x45);
    for (int i = 0; i < 5000 && !(disk_rd(vm, 0x060) & VIRTIO_MMIO_INT_VRING); i++)
        usleep(1000);
    assert_int_equal(disk_rd(vm, 0x060), VIRTIO_MMIO_INT_VRING);
    /* Stopping joins the thread; the counts hold after it. */
    vm_disks_stop(&vm->disks);
    assert_int_equal(vm->disks.v[0].thread_kicks, 1);
    assert_int_equal(vm->disks.v[0].blk.reads, 1);
    vm_destroy(vm);
    unlink(path);
}

static int skip_without_kvm(void **state)
{
    (void)state;
    hv_need_kvm("vm_kvm_test");
    return 0;
}

static void run_hello(unsigned nr_vcpus)
{
    int fd = tiny_console_fd();
    struct vm *vm = tiny_vm(nr_vcpus, fd, g_hello, sizeof(g_hello), NULL);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_EXIT);
    assert_int_equal(r.status, 0x2a); /* 0x12a & 0xff */
    char buf[64];
    tiny_read_console(fd, buf, sizeof(buf));
    assert_string_equal(buf, "hi\n");
    vm_destroy(vm);
    close(fd);
}

static void test_hello_1vcpu(void **state)
{
    (void)state;
    run_hello(1);
}

/* The AP never gets INIT/SIPI: it sits in KVM_RUN (EAGAIN path) and must still be kicked out. */
static void test_hello_2vcpus(void **state)
{
    (void)state;
    run_hello(2);
}

static void test_string_io(void **state)
{
    (void)state;
    int fd = tiny_console_fd();
    struct vm *vm = tiny_vm(1, fd, g_rep_outsb, sizeof(g_rep_outsb), NULL);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_EXIT);
    assert_int_equal(r.status, 7);
    char buf[64];
    tiny_read_console(fd, buf, sizeof(buf));
    assert_string_equal(buf, "rep ok");
    vm_destroy(vm);
    close(fd);
}

static void test_idle_timeout(void **state)
{
    (void)state;
    struct vm_config base = {.timeout_s = 0.2};
    struct vm *vm = tiny_vm(2, -1, g_idle, sizeof(g_idle), &base);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_TIMEOUT);
    assert_int_equal(r.status, 124);
    vm_destroy(vm);
}

static void test_triple_fault(void **state)
{
    (void)state;
    struct vm *vm = tiny_vm(1, -1, g_ud2, sizeof(g_ud2), NULL);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_TRIPLE_FAULT);
    assert_int_equal(r.status, 1);
    assert_int_equal(r.vcpu, 0);
    assert_non_null(strstr(r.detail, "triple fault"));
    assert_non_null(strstr(r.detail, "RIP="));
    vm_destroy(vm);
}

static void test_i8042_reset(void **state)
{
    (void)state;
    struct vm *vm = tiny_vm(2, -1, g_reset, sizeof(g_reset), NULL);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_RESET);
    assert_int_equal(r.status, 0);
    vm_destroy(vm);
}

static void test_unclaimed_and_dummy_ports(void **state)
{
    (void)state;
    struct vm *vm = tiny_vm(1, -1, g_inports, sizeof(g_inports), NULL);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_EXIT);
    assert_int_equal(r.status, 0xfd);
    vm_destroy(vm);
}

/* Stop from another thread while the guest spins (the CLI's SIGINT path uses the same call). */
struct stopper {
    struct vm *vm;
};
static void *stop_later(void *arg)
{
    struct stopper *s = arg;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    vm_request_stop(s->vm, VM_STOP_SIGNAL, 130, -1, "test stop");
    return NULL;
}

static void test_request_stop(void **state)
{
    (void)state;
    struct vm *vm = tiny_vm(2, -1, g_spin, sizeof(g_spin), NULL);
    struct stopper s = {vm};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stop_later, &s), 0);
    struct vm_result r = tiny_run(vm);
    pthread_join(t, NULL);
    assert_int_equal(r.reason, VM_STOP_SIGNAL);
    assert_int_equal(r.status, 130);
    assert_string_equal(r.detail, "test stop");
    vm_destroy(vm);
}

/* Sampler hooks: a CLOCK_MONOTONIC timer aimed at each vCPU thread with HV_SIG_TICK, as the
 * sampler does. Every interrupted exit must see the guest RIP inside the spin loop. */
struct hook_state {
    timer_t timer[2];
    atomic_uint starts, stops;
    atomic_ulong ticks, calls, bad_rip, bad_snap;
};

static int h_start(void *ctx, struct vcpu *v, struct hv_err *err)
{
    struct hook_state *h = ctx;
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = HV_SIG_TICK;
    sev._sigev_un._tid = v->tid;
    if (timer_create(CLOCK_MONOTONIC, &sev, &h->timer[v->index]) < 0)
        return hv_errf_errno(err, "timer_create");
    struct itimerspec its = {{0, 1000000}, {0, 1000000}}; /* 1 kHz */
    timer_settime(h->timer[v->index], 0, &its, NULL);
    atomic_fetch_add(&h->starts, 1);
    return 0;
}

static void h_interrupted(void *ctx, struct vcpu *v, uint64_t ticks)
{
    struct hook_state *h = ctx;
    atomic_fetch_add(&h->ticks, ticks);
    atomic_fetch_add(&h->calls, 1);
    if (v->index != 0)
        return; /* the AP never started: nothing to check */
    struct kvm_regs regs;
    struct kvm_sregs sregs;
    if (vcpu_get_regs(v, &regs, &sregs) < 0 || regs.rip != TINY_CODE_GPA ||
        sregs.cs.selector != 0x10)
        atomic_fetch_add(&h->bad_rip, 1);
    /* The profiler's view of the same stop: the spinning tiny guest at CPL 0 is running (not
     * halted), and its LSTAR is the reset value cpu_setup wrote (0). */
    struct gw_snapshot s;
    if (vcpu_snapshot(v, &s, GW_SNAP_HALTED | GW_SNAP_MSRS) < 0 || s.rip != regs.rip ||
        s.rsp != regs.rsp || s.cr3 != sregs.cr3 || s.efer != sregs.efer || s.cpl != 0 ||
        s.fs_base != sregs.fs.base || s.gs_base != sregs.gs.base ||
        s.have != (GW_SNAP_HALTED | GW_SNAP_MSRS) || s.halted || s.lstar != 0)
        atomic_fetch_add(&h->bad_snap, 1);
}

static void h_stop(void *ctx, struct vcpu *v)
{
    struct hook_state *h = ctx;
    timer_delete(h->timer[v->index]);
    atomic_fetch_add(&h->stops, 1);
}

static void run_hooks(bool sync_regs)
{
    struct hook_state h;
    memset(&h, 0, sizeof(h));
    struct vm_config base = {
        .timeout_s = 0.3,
        .sync_regs = sync_regs,
        .hooks = {.ctx = &h,
                  .vcpu_start = h_start,
                  .vcpu_interrupted = h_interrupted,
                  .vcpu_stop = h_stop},
    };
    struct vm *vm = tiny_vm(2, -1, g_spin, sizeof(g_spin), &base);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_TIMEOUT);
    assert_int_equal(h.starts, 2);
    assert_int_equal(h.stops, 2);
    assert_true(h.ticks > 10); /* ~300 per vCPU expected; any real delivery passes */
    assert_true(h.calls > 0);
    assert_int_equal(h.bad_rip, 0);
    assert_int_equal(h.bad_snap, 0);
    if (sync_regs)
        assert_true(vm->vcpus[0].use_sync_regs == ((vm->kvm.sync_regs & 3) == 3));
    vm_destroy(vm);
}

static void test_hooks_sync_regs(void **state)
{
    (void)state;
    run_hooks(true);
}

static void test_hooks_ioctl_regs(void **state)
{
    (void)state;
    run_hooks(false);
}

static int h_start_fail(void *ctx, struct vcpu *v, struct hv_err *err)
{
    (void)ctx;
    (void)v;
    return hv_errf(err, "no timers today");
}

static void test_hook_start_failure_stops_vm(void **state)
{
    (void)state;
    struct vm_config base = {.hooks = {.vcpu_start = h_start_fail}};
    struct vm *vm = tiny_vm(2, -1, g_spin, sizeof(g_spin), &base);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_ERROR);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.detail, "no timers today"));
    vm_destroy(vm);
}

/* RAM above 3 GiB continues at 4 GiB: two KVM slots, both in gmem, the gap unbacked. */
static void test_memory_split(void **state)
{
    (void)state;
    struct vm_config base = {.mem_bytes = (3ull << 30) + (512ull << 20)};
    int fd = tiny_console_fd();
    struct vm *vm = tiny_vm(1, fd, g_hello, sizeof(g_hello), &base);
    const struct gmem *m = vm_gmem(vm);
    assert_int_equal(m->nslots, 2);
    assert_true(m->slot[0].gpa == 0 && m->slot[0].size == 3ull << 30);
    assert_true(m->slot[1].gpa == 4ull << 30 && m->slot[1].size == 512ull << 20);
    assert_null(gmem_ptr(m, 0xfee00000ull, 4)); /* LAPIC page: MMIO, not RAM */
    assert_true(gmem_ram_bytes(m) == base.mem_bytes);
    struct vm_result r = tiny_run(vm);
    assert_int_equal(r.reason, VM_STOP_EXIT);
    assert_int_equal(r.status, 0x2a);
    vm_destroy(vm);
    close(fd);
}

static void test_bad_config(void **state)
{
    (void)state;
    struct hv_err err = {0};
    struct vm_config cfg = {.nr_vcpus = 0, .mem_bytes = 64 << 20, .console_fd = -1};
    assert_null(vm_create(&cfg, &err));
    assert_non_null(strstr(err.msg, "vCPUs"));
    cfg.nr_vcpus = 1;
    cfg.mem_bytes = 1 << 20;
    assert_null(vm_create(&cfg, &err));
    assert_non_null(strstr(err.msg, "minimum is 16 MiB"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_hello_1vcpu, skip_without_kvm),
        cmocka_unit_test_setup(test_hello_2vcpus, skip_without_kvm),
        cmocka_unit_test_setup(test_string_io, skip_without_kvm),
        cmocka_unit_test_setup(test_idle_timeout, skip_without_kvm),
        cmocka_unit_test_setup(test_triple_fault, skip_without_kvm),
        cmocka_unit_test_setup(test_i8042_reset, skip_without_kvm),
        cmocka_unit_test_setup(test_unclaimed_and_dummy_ports, skip_without_kvm),
        cmocka_unit_test_setup(test_request_stop, skip_without_kvm),
        cmocka_unit_test_setup(test_hooks_sync_regs, skip_without_kvm),
        cmocka_unit_test_setup(test_hooks_ioctl_regs, skip_without_kvm),
        cmocka_unit_test_setup(test_hook_start_failure_stops_vm, skip_without_kvm),
        cmocka_unit_test_setup(test_memory_split, skip_without_kvm),
        cmocka_unit_test_setup(test_bad_config, skip_without_kvm),
        cmocka_unit_test_setup(test_disk_io_thread, skip_without_kvm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
