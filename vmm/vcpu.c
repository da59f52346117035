#include "sandbox/sandbox.h"
#include "vmm/vcpu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmm/cpu_setup.h"
#include "vmm/exit_sites.h"
#include "vmm/signals.h"
#include "vmm/watchdog.h"

int vcpu_get_regs(struct vcpu *v, struct kvm_regs *regs, struct kvm_sregs *sregs)
{
    /* With SYNC_REGS the kernel stores regs/sregs into kvm_run on every KVM_RUN return,
     * including -EINTR (api.rst 6.74), so no ioctl is needed. */
    if (v->use_sync_regs) {
        if (regs)
            *regs = v->run->s.regs.regs;
        if (sregs)
            *sregs = v->run->s.regs.sregs;
        return 0;
    }
    if (regs && ioctl(v->fd, KVM_GET_REGS, regs) < 0)
        return -1;
    if (sregs && ioctl(v->fd, KVM_GET_SREGS, sregs) < 0)
        return -1;
    return 0;
}

void vcpu_kick(struct vcpu *v)
{
    if (!v->thread_started)
        return;
    /* Firecracker's order (docs/sources.md §2): immediate_exit covers "not in KVM_RUN yet", the
     * signal covers "inside the guest". The release store orders any request flag before it. */
    if (v->run)
        __atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_RELEASE);
    pthread_kill(v->thread, HV_SIG_KICK);
}

static void dump_seg(char *buf, size_t len, const char *name, const struct kvm_segment *s)
{
    size_t used = strnlen(buf, len);
    snprintf(buf + used, len - used, " %s=%04x(base %llx lim %x type %x dpl %u l%u db%u p%u)", name,
             s->selector, (unsigned long long)s->base, s->limit, s->type, s->dpl, s->l, s->db,
             s->present);
}

void vcpu_dump(struct vcpu *v, char *buf, size_t len)
{
    struct kvm_regs r;
    struct kvm_sregs s;
    size_t used = strnlen(buf, len);
    if (ioctl(v->fd, KVM_GET_REGS, &r) < 0 || ioctl(v->fd, KVM_GET_SREGS, &s) < 0) {
        snprintf(buf + used, len - used, "\n  (registers unavailable: %s)", strerror(errno));
        return;
    }
    snprintf(buf + used, len - used,
             "\n  vcpu%d RIP=%016llx RSP=%016llx RFLAGS=%08llx"
             "\n  RAX=%016llx RBX=%016llx RCX=%016llx RDX=%016llx"
             "\n  RSI=%016llx RDI=%016llx RBP=%016llx R8 =%016llx"
             "\n  CR0=%08llx CR2=%016llx CR3=%016llx CR4=%08llx EFER=%llx"
             "\n  GDT=%llx/%x IDT=%llx/%x\n ",
             v->index, (unsigned long long)r.rip, (unsigned long long)r.rsp,
             (unsigned long long)r.rflags, (unsigned long long)r.rax, (unsigned long long)r.rbx,
             (unsigned long long)r.rcx, (unsigned long long)r.rdx, (unsigned long long)r.rsi,
             (unsigned long long)r.rdi, (unsigned long long)r.rbp, (unsigned long long)r.r8,
             (unsigned long long)s.cr0, (unsigned long long)s.cr2, (unsigned long long)s.cr3,
             (unsigned long long)s.cr4, (unsigned long long)s.efer, (unsigned long long)s.gdt.base,
             s.gdt.limit, (unsigned long long)s.idt.base, s.idt.limit);
    dump_seg(buf, len, "CS", &s.cs);
    dump_seg(buf, len, "SS", &s.ss);
    dump_seg(buf, len, "TR", &s.tr);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Fatal exit: the message, the vCPU's registers now, and those of its last exit before this
 * one, as the stop detail. */
static void stop_with_dump(struct vcpu *v, enum vm_stop_reason why, const char *what)
{
    char msg[sizeof(v->vm->result.detail)];
    snprintf(msg, sizeof(msg), "vcpu%d: %s", v->index, what);
    vcpu_dump(v, msg, sizeof(msg));
    vcpu_dump_last_exit(v, mono_ns(), msg, sizeof(msg));
    vm_request_stop(v->vm, why, 1, v->index, msg);
}

/* Keep this exit's registers for reports (with SYNC_REGS they are already in kvm_run: two
 * copies of ~450 bytes, no ioctl). Not for a shutdown: those registers are the reset state. */
static uint64_t save_last_exit(struct vcpu *v, uint32_t reason)
{
    uint64_t now = mono_ns();
    if (reason == KVM_EXIT_SHUTDOWN)
        return now;
    if (v->use_sync_regs) {
        v->last_regs = v->run->s.regs.regs;
        v->last_sregs = v->run->s.regs.sregs;
    }
    v->last_exit_reason = reason;
    atomic_store_explicit(&v->last_exit_ns, now, memory_order_release);
    return now;
}

_Static_assert(VM_EXIT_KINDS <= sizeof(((struct vcpu *)0)->exit_counts) / sizeof(uint64_t),
               "exit_counts too small");

/* The kind of an exit the run loop handled and continues from (vmm/exit_sites.h). */
static enum vm_exit_kind exit_kind(const struct kvm_run *run)
{
    switch (run->exit_reason) {
    case KVM_EXIT_IO:
        return run->io.direction == KVM_EXIT_IO_OUT ? VM_EXIT_PIO_OUT : VM_EXIT_PIO_IN;
    case KVM_EXIT_MMIO:
        return run->mmio.is_write ? VM_EXIT_MMIO_WRITE : VM_EXIT_MMIO_READ;
    case KVM_EXIT_HLT:
        return VM_EXIT_HLT;
    default:
        return VM_EXIT_OTHER;
    }
}

static void handle_io(struct vcpu *v)
{
    struct kvm_run *run = v->run;
    unsigned size = run->io.size;
    uint64_t end = run->io.data_offset + (uint64_t)run->io.count * size;
    if (size == 0 || size > 4 || end > (uint64_t)v->vm->kvm.vcpu_mmap_size)
        return; /* malformed: nothing sane to do, and nothing to write back */
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    bool is_write = run->io.direction == KVM_EXIT_IO_OUT;
    /* String I/O (rep outsb/insb) arrives as `count` packed elements (api.rst 5 KVM_EXIT_IO). */
    for (uint32_t i = 0; i < run->io.count; i++)
        iobus_dispatch(&v->vm->dev.bus, run->io.port, is_write, data + (size_t)i * size, size);
}

static void handle_system_event(struct vcpu *v)
{
    char what[64];
    switch (v->run->system_event.type) {
    case KVM_SYSTEM_EVENT_SHUTDOWN:
        vm_request_stop(v->vm, VM_STOP_POWEROFF, 0, v->index, "guest powered off");
        break;
    case KVM_SYSTEM_EVENT_RESET:
        vm_request_stop(v->vm, VM_STOP_RESET, 0, v->index, "guest reset (system event)");
        break;
    default:
        snprintf(what, sizeof(what), "guest crashed (system event %u)", v->run->system_event.type);
        stop_with_dump(v, VM_STOP_INTERNAL_ERROR, what);
        break;
    }
}

/* One exit. Returns false when the loop must end (a stop was requested). */
static bool handle_exit(struct vcpu *v)
{
    struct kvm_run *run = v->run;
    char what[160];
    switch (run->exit_reason) {
    case KVM_EXIT_IO:
        handle_io(v);
        return true;
    case KVM_EXIT_MMIO:
        /* The disks' and the network card's virtio windows (vmm/disks.h, vmm/netdev.h); nothing
         * else in user space (LAPIC/IOAPIC are in the kernel): other reads return 0. */
        {
            unsigned len = run->mmio.len <= sizeof(run->mmio.data) ? run->mmio.len : 0;
            if (!vm_disks_mmio(&v->vm->disks, run->mmio.phys_addr, run->mmio.data, len,
                               run->mmio.is_write) &&
                !vm_net_mmio(&v->vm->net, run->mmio.phys_addr, run->mmio.data, len,
                             run->mmio.is_write) &&
                !run->mmio.is_write)
                memset(run->mmio.data, 0, sizeof(run->mmio.data));
        }
        return true;
    case KVM_EXIT_HLT:
    case KVM_EXIT_INTR:
        /* With the in-kernel LAPIC, HLT blocks in the kernel; an exit here just re-enters. */
        return true;
    case KVM_EXIT_SHUTDOWN:
        /* Triple fault. The registers KVM reports now are the reset state on AMD (KVM
         * re-initialises the VMCB after a shutdown; docs/sources.md §2): the last exit's are kept.
         */
        stop_with_dump(v, VM_STOP_TRIPLE_FAULT,
                       "guest triple fault (KVM_EXIT_SHUTDOWN); registers now (AMD shows the "
                       "reset state):");
        return false;
    case KVM_EXIT_SYSTEM_EVENT:
        handle_system_event(v);
        return false;
    case KVM_EXIT_INTERNAL_ERROR:
        snprintf(what, sizeof(what), "KVM internal error, suberror %u%s (data[0] 0x%llx)",
                 run->internal.suberror,
                 run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION ? " (emulation failure)"
                                                                        : "",
                 (unsigned long long)(run->internal.ndata ? run->internal.data[0] : 0));
        stop_with_dump(v, VM_STOP_INTERNAL_ERROR, what);
        return false;
    case KVM_EXIT_FAIL_ENTRY:
        snprintf(what, sizeof(what), "VM entry failed, hardware reason 0x%llx",
                 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
        stop_with_dump(v, VM_STOP_INTERNAL_ERROR, what);
        return false;
    default:
        snprintf(what, sizeof(what), "unexpected KVM exit reason %u", run->exit_reason);
        stop_with_dump(v, VM_STOP_INTERNAL_ERROR, what);
        return false;
    }
}

static void run_loop(struct vcpu *v)
{
    struct vm *vm = v->vm;
    const struct vm_hooks *h = &vm->cfg.hooks;
    struct kvm_run *run = v->run;
    for (;;) {
        if (atomic_load_explicit(&vm->stopping, memory_order_acquire))
            return;
        if (v->use_sync_regs)
            run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
        atomic_store_explicit(&v->run_enter_ns, mono_ns(), memory_order_release);
        int r = ioctl(v->fd, KVM_RUN, 0);
        int e = errno;
        atomic_store_explicit(&v->run_enter_ns, 0, memory_order_release);
        uint64_t exit_ns = save_last_exit(v, r < 0 ? KVM_EXIT_INTR : run->exit_reason);
        if (r < 0) {
            /* After -1, exit_reason is stale (api.rst, KVM_EXIT_MEMORY_FAULT note). */
            if (e == EINTR) {
                /* Clear first, then collect the ticks: a tick landing in between is counted
                 * now and also re-sets immediate_exit (one spurious 0-tick call, nothing lost). */
                __atomic_store_n(&run->immediate_exit, 0, __ATOMIC_RELAXED);
                atomic_signal_fence(memory_order_seq_cst);
                uint64_t ticks = atomic_exchange_explicit(&v->ticks, 0, memory_order_relaxed);
                if (h->vcpu_interrupted)
                    h->vcpu_interrupted(h->ctx, v, ticks);
                continue;
            }
            if (e == EAGAIN)
                continue; /* AP waiting for INIT/SIPI (api.rst 4.38) */
            char msg[128];
            snprintf(msg, sizeof(msg), "vcpu%d: KVM_RUN: %s", v->index, strerrordesc_np(e));
            vm_request_stop(vm, VM_STOP_ERROR, 1, v->index, msg);
            return;
        }
        if (!handle_exit(v))
            return;
        /* KVM_EXIT_INTR here is a signal that came with no tick: nothing the guest did. */
        if (run->exit_reason == KVM_EXIT_INTR)
            continue;
        v->exit_counts[exit_kind(run)]++;
        if (h->vcpu_exited)
            h->vcpu_exited(h->ctx, v, vm_exit_site_of(vm, run), exit_ns, mono_ns());
    }
}

/* Segment/descriptor/control state from the loader; the rest (APIC base, pending interrupts)
 * stays as KVM's reset state has it. */
static int apply_entry(struct vcpu *v, struct hv_err *err)
{
    const struct vm_entry *e = &v->vm->entry;
    struct kvm_sregs s;
    if (ioctl(v->fd, KVM_GET_SREGS, &s) < 0)
        return hv_errf_errno(err, "KVM_GET_SREGS");
    s.cs = e->sregs.cs;
    s.ds = e->sregs.ds;
    s.es = e->sregs.es;
    s.fs = e->sregs.fs;
    s.gs = e->sregs.gs;
    s.ss = e->sregs.ss;
    s.tr = e->sregs.tr;
    s.ldt = e->sregs.ldt;
    s.gdt = e->sregs.gdt;
    s.idt = e->sregs.idt;
    s.cr0 = e->sregs.cr0;
    s.cr2 = e->sregs.cr2;
    s.cr3 = e->sregs.cr3;
    s.cr4 = e->sregs.cr4;
    s.efer = e->sregs.efer;
    if (ioctl(v->fd, KVM_SET_SREGS, &s) < 0)
        return hv_errf_errno(err, "KVM_SET_SREGS");
    if (ioctl(v->fd, KVM_SET_REGS, &e->regs) < 0)
        return hv_errf_errno(err, "KVM_SET_REGS");
    return 0;
}

static int vcpu_init(struct vcpu *v, struct hv_err *err)
{
    struct vm *vm = v->vm;
    v->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)v->index);
    if (v->fd < 0)
        return hv_errf_errno(err, "KVM_CREATE_VCPU %d", v->index);
    void *run =
        mmap(NULL, (size_t)vm->kvm.vcpu_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
    if (run == MAP_FAILED)
        return hv_errf_errno(err, "mmap kvm_run of vcpu%d", v->index);
    v->run = run;
    char refused[256];
    if (cpu_setup_vcpu(v->fd, v->cpuid, refused, sizeof(refused), err) < 0)
        return hv_err_prefix(err, "vcpu%d", v->index);
    if (refused[0] && !atomic_exchange(&vm->msr_warned, true))
        fprintf(stderr, "hvprof: warning: this KVM refused MSRs %s (continuing without them)\n",
                refused);
    if (v->index == 0 && vm->has_entry && apply_entry(v, err) < 0)
        return hv_err_prefix(err, "vcpu0 entry state");
    return 0;
}

/* Wait at the start gate; returns false if the VM is stopping instead of starting. */
static bool wait_gate(struct vm *vm)
{
    pthread_mutex_lock(&vm->gate_lock);
    vm->gate_arrived++;
    pthread_cond_broadcast(&vm->gate_cond);
    while (!vm->gate_open)
        pthread_cond_wait(&vm->gate_cond, &vm->gate_lock);
    pthread_mutex_unlock(&vm->gate_lock);
    return !atomic_load(&vm->stopping);
}

void *vcpu_thread(void *arg)
{
    struct vcpu *v = arg;
    struct vm *vm = v->vm;
    const struct vm_hooks *h = &vm->cfg.hooks;
    char name[16];
    snprintf(name, sizeof(name), "vcpu%d", v->index);
    pthread_setname_np(pthread_self(), name);
    v->tid = gettid();

    struct hv_err err = {0};
    bool hooked = false;
    int ok = vcpu_init(v, &err);
    if (ok == 0) {
        hv_signals_enter_vcpu(v);
        if (h->vcpu_start) {
            ok = h->vcpu_start(h->ctx, v, &err);
            if (ok < 0)
                hv_err_prefix(&err, "vcpu%d: sampler start", v->index);
        }
        hooked = ok == 0;
    }
    if (ok < 0)
        vm_request_stop(vm, VM_STOP_ERROR, 1, v->index, err.msg);
    /* Set up (its fd, its timer, the files its hooks keep open): from here on it opens no file
     * and makes no process; sockets only with --net (sandbox/sandbox.h). */
    sandbox_thread_enter(SANDBOX_VCPU);
    if (wait_gate(vm) && ok == 0)
        run_loop(v);
    if (hooked && h->vcpu_stop)
        h->vcpu_stop(h->ctx, v);
    hv_signals_leave_vcpu();
    return NULL;
}
