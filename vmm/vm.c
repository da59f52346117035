#include "vmm/vm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmm/boot/boot.h"
#include "vmm/cpu_setup.h"
#include "vmm/boot/hvprof_boot.h"
#include "vmm/signals.h"
#include "vmm/vcpu.h"
#include "vmm/watchdog.h"

/* Below 4 GiB, outside every memory slot (api.rst 4.48 KVM_SET_TSS_ADDR: three pages; 4.56
 * KVM_SET_IDENTITY_MAP_ADDR: one page, "Fails if any VCPU has already been created"). They sit
 * in the MMIO gap, which never holds RAM. */
#define VM_TSS_ADDR          0xfffbd000ull
#define VM_IDENTITY_MAP_ADDR 0xfffbc000ull

const char *vm_stop_reason_name(enum vm_stop_reason r)
{
    switch (r) {
    case VM_STOP_NONE:
        return "running";
    case VM_STOP_EXIT:
        return "exit";
    case VM_STOP_RESET:
        return "reset";
    case VM_STOP_POWEROFF:
        return "poweroff";
    case VM_STOP_TRIPLE_FAULT:
        return "triple-fault";
    case VM_STOP_INTERNAL_ERROR:
        return "internal-error";
    case VM_STOP_TIMEOUT:
        return "timeout";
    case VM_STOP_SIGNAL:
        return "signal";
    case VM_STOP_ERROR:
        return "error";
    case VM_STOP_VCPU_STUCK:
        return "vcpu-stuck";
    }
    return "?";
}

void vm_request_stop(struct vm *vm, enum vm_stop_reason reason, int status, int vcpu,
                     const char *detail)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&vm->stop_claim, &expected, 1))
        return;
    vm->result.reason = reason;
    vm->result.status = status;
    vm->result.vcpu = vcpu;
    size_t i = 0;
    /* A bounded byte copy: safe in a signal handler, unlike snprintf. */
    for (; detail && detail[i] && i + 1 < sizeof(vm->result.detail); i++)
        vm->result.detail[i] = detail[i];
    vm->result.detail[i] = 0;
    atomic_store_explicit(&vm->stopping, true, memory_order_release);
    sem_post(&vm->wake);
}

void vm_set_entry(struct vm *vm, const struct vm_entry *entry)
{
    vm->entry = *entry;
    vm->has_entry = true;
}

static int create_vm_fd(struct vm *vm, struct hv_err *err)
{
    /* KVM_CREATE_VM can fail with EINTR on a loaded host; QEMU and Firecracker retry. */
    for (int attempt = 0; attempt < 5; attempt++) {
        vm->vm_fd = ioctl(vm->kvm.fd, KVM_CREATE_VM, 0);
        if (vm->vm_fd >= 0 || errno != EINTR)
            break;
    }
    if (vm->vm_fd < 0)
        return hv_errf_errno(err, "KVM_CREATE_VM");
    if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, (unsigned long)VM_TSS_ADDR) < 0)
        return hv_errf_errno(err, "KVM_SET_TSS_ADDR");
    if (vm->kvm.set_identity_map) {
        uint64_t addr = VM_IDENTITY_MAP_ADDR;
        if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &addr) < 0)
            return hv_errf_errno(err, "KVM_SET_IDENTITY_MAP_ADDR");
    }
    /* IRQCHIP before PIT2 ("only valid after enabling in-kernel irqchip", api.rst 4.71) and
     * before any vCPU so each one gets an in-kernel LAPIC. */
    if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
        return hv_errf_errno(err, "KVM_CREATE_IRQCHIP");
    /* More than 255 vCPUs: APIC ids no longer fit 8 bits; the in-kernel irqchip must take 32-bit
     * x2APIC ids in MSI and IOAPIC destinations (api.rst 7.9, KVM_CAP_X2APIC_API). Only then:
     * the flag changes what KVM_GET/SET_LAPIC mean for the APIC ID register. */
    if (vm->cfg.nr_vcpus > 255) {
        struct kvm_enable_cap c = {
            .cap = KVM_CAP_X2APIC_API,
            .args = {KVM_X2APIC_API_USE_32BIT_IDS | KVM_X2APIC_API_DISABLE_BROADCAST_QUIRK}};
        if (!vm->kvm.x2apic_api || ioctl(vm->vm_fd, KVM_ENABLE_CAP, &c) < 0)
            return hv_errf(err, "%u vCPUs need KVM_CAP_X2APIC_API, which this host lacks",
                           vm->cfg.nr_vcpus);
    }
    /* SPEAKER_DUMMY: port 0x61 (PIT channel 2 gate, used by TSC calibration) stays in-kernel. */
    struct kvm_pit_config pit = {.flags = KVM_PIT_SPEAKER_DUMMY};
    if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0)
        return hv_errf_errno(err, "KVM_CREATE_PIT2");
    return 0;
}

/* RAM below the 32-bit MMIO gap, the rest from 4 GiB: the regions come from the loader's
 * layout_ram_regions() so the e820 map and the memory slots can never disagree. */
static int create_ram(struct vm *vm, struct hv_err *err)
{
    struct ram_region reg[2];
    unsigned n = 0;
    if (layout_ram_regions(vm->cfg.mem_bytes, reg, &n, err) < 0)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        void *p = mmap(NULL, reg[i].size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return hv_errf_errno(err, "mmap %llu MiB of guest RAM",
                                 (unsigned long long)(reg[i].size >> 20));
        vm->ram[i] = p;
        vm->ram_size[i] = reg[i].size;
        madvise(p, reg[i].size, MADV_HUGEPAGE); /* best effort: fewer TLB misses */
        struct kvm_userspace_memory_region r = {
            .slot = i,
            .guest_phys_addr = reg[i].gpa,
            .memory_size = reg[i].size,
            .userspace_addr = (uint64_t)(uintptr_t)p,
        };
        if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0)
            return hv_errf_errno(err, "KVM_SET_USER_MEMORY_REGION slot %u", i);
        if (gmem_add(&vm->gmem, reg[i].gpa, reg[i].size, p, err) < 0)
            return -1;
    }
    return 0;
}

static int check_config(const struct vm_config *cfg, const struct kvm_sys *k, struct hv_err *err)
{
    unsigned max = (unsigned)k->max_vcpus < VM_MAX_VCPUS ? (unsigned)k->max_vcpus : VM_MAX_VCPUS;
    if (cfg->nr_vcpus < 1 || cfg->nr_vcpus > max)
        return hv_errf(err, "%u vCPUs requested: this host allows 1 to %u", cfg->nr_vcpus, max);
    if (cfg->mem_bytes < VM_MIN_MEM)
        return hv_errf(err, "guest memory of %llu bytes is too small: the minimum is %llu MiB",
                       (unsigned long long)cfg->mem_bytes, VM_MIN_MEM >> 20);
    if (cfg->mem_bytes & 0xfff)
        return hv_errf(err, "guest memory must be a multiple of 4 KiB");
    return 0;
}

struct vm *vm_create(const struct vm_config *cfg, struct hv_err *err)
{
    struct vm *vm = calloc(1, sizeof(*vm));
    if (!vm) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    vm->cfg = *cfg;
    vm->vm_fd = -1;
    vm->kvm.fd = -1;
    gmem_init(&vm->gmem);
    sem_init(&vm->wake, 0, 0);
    pthread_mutex_init(&vm->gate_lock, NULL);
    pthread_cond_init(&vm->gate_cond, NULL);
    if (vm_devices_init(&vm->dev, vm, cfg->console_fd, cfg->console_max, err) < 0)
        goto fail;
    /* The disks first among the files: a wrong image fails before KVM is set up. */
    if (vm_disks_open(&vm->disks, vm, cfg->disks, cfg->ndisks, err) < 0)
        goto fail;
    /* The network's forwarded ports bound before KVM is set up too: a port in use fails now. */
    if (vm_net_open(&vm->net, vm, cfg->net, err) < 0)
        goto fail;
    if (hv_signals_install() < 0) {
        hv_errf_errno(err, "installing the vCPU signal handlers");
        goto fail;
    }
    hv_signals_block();
    if (kvm_sys_open(&vm->kvm, err) < 0)
        goto fail;
    if (check_config(cfg, &vm->kvm, err) < 0)
        goto fail;
    if (create_vm_fd(vm, err) < 0 || create_ram(vm, err) < 0)
        goto fail;
    vm->vcpus = calloc(cfg->nr_vcpus, sizeof(*vm->vcpus));
    if (!vm->vcpus) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    const int want = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
    for (unsigned i = 0; i < cfg->nr_vcpus; i++) {
        struct vcpu *v = &vm->vcpus[i];
        v->index = (int)i;
        v->fd = -1;
        v->vm = vm;
        v->use_sync_regs = cfg->sync_regs && (vm->kvm.sync_regs & want) == want;
        v->cpuid = cpu_cpuid_for_vcpu(vm->kvm.cpuid, i, cfg->nr_vcpus, err);
        if (!v->cpuid)
            goto fail;
    }
    return vm;
fail:
    vm_destroy(vm);
    return NULL;
}

static void open_gate(struct vm *vm)
{
    pthread_mutex_lock(&vm->gate_lock);
    vm->gate_open = true;
    pthread_cond_broadcast(&vm->gate_cond);
    pthread_mutex_unlock(&vm->gate_lock);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec ts_at(uint64_t ns)
{
    return (struct timespec){(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
}

/* Wait for a stop request or the timeout, checking once a second for a stuck vCPU
 * (vmm/watchdog.h). sem_clockwait is interrupted by SIGINT etc.: loop. */
static void wait_for_stop(struct vm *vm)
{
    uint64_t start = mono_ns();
    uint64_t deadline = vm->cfg.timeout_s > 0 ? start + (uint64_t)(vm->cfg.timeout_s * 1e9) : 0;
    while (!atomic_load(&vm->stopping)) {
        uint64_t now = mono_ns();
        if (deadline && now >= deadline) {
            char msg[96];
            snprintf(msg, sizeof(msg), "timeout after %g s", vm->cfg.timeout_s);
            vm_request_stop(vm, VM_STOP_TIMEOUT, 124, -1, msg);
            break;
        }
        vm_watchdog_check(vm, now);
        uint64_t wake = now + 1000000000ull;
        if (deadline && deadline < wake)
            wake = deadline;
        struct timespec ts = ts_at(wake);
        sem_clockwait(&vm->wake, CLOCK_MONOTONIC, &ts);
    }
}

/* Join a vCPU thread, waiting at most `s` seconds: a thread stuck in KVM_RUN never returns, and
 * the VM must still stop (its resources are then never freed: vm_destroy skips them). */
static bool join_within(struct vcpu *v, unsigned s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* pthread_timedjoin_np takes CLOCK_REALTIME */
    ts.tv_sec += s;
    return pthread_timedjoin_np(v->thread, NULL, &ts) == 0;
}

int vm_start_devices(struct vm *vm, struct hv_err *err)
{
    if (vm->devices_started)
        return 0;
    if (vm_disks_start(&vm->disks, err) < 0 || vm_net_start(&vm->net, err) < 0)
        return -1;
    vm->devices_started = true;
    return 0;
}

int vm_run(struct vm *vm, struct vm_result *res, struct hv_err *err)
{
    int rc = 0;
    unsigned started = 0;
    /* The devices' threads first (disks, network), made now so that a confined command's
     * threads are all made after its confinement (sandbox/sandbox.h). */
    if (vm_start_devices(vm, err) < 0) {
        vm_request_stop(vm, VM_STOP_ERROR, 1, -1, err->msg);
        if (res)
            *res = vm->result;
        return -1;
    }
    hv_signals_block(); /* inherited by the vCPU threads until they unblock for themselves */
    for (; started < vm->cfg.nr_vcpus; started++) {
        struct vcpu *v = &vm->vcpus[started];
        int e = pthread_create(&v->thread, NULL, vcpu_thread, v);
        if (e) {
            errno = e;
            hv_errf_errno(err, "creating the thread of vcpu%u", started);
            vm_request_stop(vm, VM_STOP_ERROR, 1, (int)started, err->msg);
            rc = -1;
            break;
        }
        v->thread_started = true;
    }
    /* Everyone that exists has created its vCPU before anyone runs. */
    pthread_mutex_lock(&vm->gate_lock);
    while (vm->gate_arrived < started)
        pthread_cond_wait(&vm->gate_cond, &vm->gate_lock);
    pthread_mutex_unlock(&vm->gate_lock);
    open_gate(vm);

    wait_for_stop(vm);
    for (unsigned i = 0; i < started; i++)
        vcpu_kick(&vm->vcpus[i]);
    for (unsigned i = 0; i < started; i++) {
        struct vcpu *v = &vm->vcpus[i];
        unsigned wait = vm->result.reason == VM_STOP_VCPU_STUCK ? 5 : 60;
        v->joined = join_within(v, wait);
        if (!v->joined)
            fprintf(stderr, "hvprof: vcpu%u did not stop; leaving its thread behind\n", i);
        v->thread_started = false;
    }
    vm_devices_flush(&vm->dev);
    if (res)
        *res = vm->result;
    return rc;
}

void vm_destroy(struct vm *vm)
{
    if (!vm)
        return;
    /* The disks' I/O threads first: a request being served ends before its image closes; the
     * network's thread, which delivers into guest memory, too. */
    vm_disks_stop(&vm->disks);
    vm_net_stop(&vm->net);
    /* A vCPU thread that never came back may still return from KVM_RUN and touch its kvm_run
     * page and this struct: leave everything mapped (the process is about to exit anyway). */
    for (unsigned i = 0; vm->vcpus && i < vm->cfg.nr_vcpus; i++)
        if (vm->vcpus[i].fd >= 0 && vm->vcpus[i].run && !vm->vcpus[i].joined)
            return;
    for (unsigned i = 0; vm->vcpus && i < vm->cfg.nr_vcpus; i++) {
        struct vcpu *v = &vm->vcpus[i];
        if (v->run)
            munmap(v->run, (size_t)vm->kvm.vcpu_mmap_size);
        if (v->fd >= 0)
            close(v->fd);
        free(v->cpuid);
    }
    free(vm->vcpus);
    if (vm->vm_fd >= 0)
        close(vm->vm_fd);
    for (unsigned i = 0; i < 2; i++)
        if (vm->ram[i])
            munmap(vm->ram[i], vm->ram_size[i]);
    kvm_sys_close(&vm->kvm);
    vm_disks_close(&vm->disks);
    vm_net_close(&vm->net);
    if (vm->dev.vm)
        vm_devices_destroy(&vm->dev);
    pthread_cond_destroy(&vm->gate_cond);
    pthread_mutex_destroy(&vm->gate_lock);
    sem_destroy(&vm->wake);
    free(vm);
}
