/* The VMM runtime: one KVM VM with its RAM, in-kernel irqchip/PIT, legacy devices and one pthread
 * per vCPU. This is the interface `hvprof run` and `hvprof record` (sampler/) build on.
 *
 * Life cycle (all on one "main" thread):
 *     vm_create(&cfg, &err)          open /dev/kvm, probe capabilities, create the VM, RAM, devices
 *     boot_load(vm_gmem(vm), ...)    write the kernel + boot structures into guest RAM (vmm/boot)
 *     vm_set_entry(vm, &entry)       BSP register state (vCPU 0); APs wait for INIT/SIPI
 *     (the command confines itself here: sandbox/sandbox.h; no thread exists before)
 *     vm_run(vm, &result, &err)      start the devices' and vCPU threads, wait for a stop, join
 *     vm_destroy(vm)
 *
 * Threads and signals (api.rst 4.10 KVM_RUN, 5 `immediate_exit`; the race-free kick of
 * docs/sources.md §2):
 *   - vCPU N runs on a pthread named "vcpu<N>" that creates and owns its vCPU fd, sets up CPUID,
 *     MSRs, LAPIC and FPU, calls hooks.vcpu_start, waits until every vCPU exists (so the BSP's
 *     INIT/SIPI always finds its APs), then loops on KVM_RUN.
 *   - HV_SIG_KICK (SIGRTMIN) stops/kicks a vCPU; HV_SIG_TICK (SIGRTMIN+1) is the sampler's timer
 *     signal. Both handlers only set `run->immediate_exit = 1` through a thread-local vCPU pointer
 *     (TICK also increments the vCPU's atomic tick counter), so a signal that arrives just before
 *     KVM_RUN still makes it return -EINTR at once. Both signals are unblocked only in vCPU
 * threads: every other thread must block them (vm_create blocks them in its caller, threads created
 *     afterwards inherit that; call hv_signals_block() in threads created otherwise).
 *   - The sampler aims a CLOCK_MONOTONIC timer (timer_create with SIGEV_THREAD_ID, sigev_signo =
 *     HV_SIG_TICK, _sigev_un._tid = v->tid) at each vCPU in hooks.vcpu_start, and deletes it in
 *     hooks.vcpu_stop.
 */
#pragma once

#include <linux/kvm.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "guestwalk/gmem.h"
#include "guestwalk/snapshot.h"
#include "vmm/devices.h"
#include "vmm/disks.h"
#include "vmm/netdev.h"
#include "vmm/kvm_sys.h"

#define HV_SIG_KICK (SIGRTMIN)     /* stop / kick a vCPU out of KVM_RUN */
#define HV_SIG_TICK (SIGRTMIN + 1) /* sampling timer aimed at one vCPU thread */

#define VM_MIN_MEM (16ull << 20) /* below this nothing useful boots; the CLI says so */
/* The ACPI MADT describes any number (x2APIC entries past APIC id 254); 1024 is KVM's own
 * KVM_MAX_VCPUS on x86, and the host may allow fewer (KVM_CAP_MAX_VCPUS, KVM_CAP_MAX_VCPU_ID). */
#define VM_MAX_VCPUS 1024

struct vcpu;

/* Callbacks for the sampler. All three run on the vCPU's own thread. Any may be NULL. */
struct vm_hooks {
    void *ctx;
    /* Before the first KVM_RUN (v->fd, v->run and v->tid are valid). Returning -1 stops the VM
     * with VM_STOP_ERROR and err's message. */
    int (*vcpu_start)(void *ctx, struct vcpu *v, struct hv_err *err);
    /* After KVM_RUN returned -1/EINTR (timer tick or kick). `ticks` = HV_SIG_TICK signals
     * received since the previous call (0 for a plain kick or a tick already counted). Guest
     * state: vcpu_snapshot(). Must not block: the guest is stopped while it runs. */
    void (*vcpu_interrupted)(void *ctx, struct vcpu *v, uint64_t ticks);
    /* Leaving the run loop (the VM is stopping); the vCPU fd is still open. */
    void (*vcpu_stop)(void *ctx, struct vcpu *v);
    /* After an exit the VMM handled in user space and that the guest continues from (port I/O,
     * MMIO, HLT): its site (vmm/exit_sites.h), when KVM_RUN returned and when the handling
     * ended (CLOCK_MONOTONIC ns). Guest state: vcpu_snapshot(). Must not block. NULL: none. */
    void (*vcpu_exited)(void *ctx, struct vcpu *v, uint32_t site, uint64_t exit_ns,
                        uint64_t done_ns);
};

/* Why a VM stopped. The status is what `hvprof run` exits with. */
enum vm_stop_reason {
    VM_STOP_NONE = 0,       /* still running */
    VM_STOP_EXIT,           /* guest wrote HVPROF_PORT_DEBUG_EXIT: status = value & 0xff */
    VM_STOP_RESET,          /* i8042 0xFE or KVM_SYSTEM_EVENT_RESET: status 0 */
    VM_STOP_POWEROFF,       /* KVM_SYSTEM_EVENT_SHUTDOWN: status 0 */
    VM_STOP_TRIPLE_FAULT,   /* KVM_EXIT_SHUTDOWN: status 1 */
    VM_STOP_INTERNAL_ERROR, /* KVM_EXIT_INTERNAL_ERROR / FAIL_ENTRY / SYSTEM_EVENT_CRASH: 1 */
    VM_STOP_TIMEOUT,        /* vm_config.timeout_s elapsed: status 124 (as timeout(1)) */
    VM_STOP_SIGNAL,         /* vm_request_stop from a signal handler: status 128 + signo */
    VM_STOP_ERROR,          /* host-side failure (ioctl, hook): status 1 */
    VM_STOP_VCPU_STUCK,     /* a vCPU did not leave KVM_RUN when kicked (vmm/watchdog.h): 1 */
};

const char *vm_stop_reason_name(enum vm_stop_reason r);

struct vm_result {
    enum vm_stop_reason reason;
    int status;        /* process exit status for `hvprof run` */
    int vcpu;          /* vCPU that caused the stop, -1 if none */
    char detail[2048]; /* one line, or a register dump for internal errors/triple faults */
};

struct vm_config {
    unsigned nr_vcpus;           /* 1..min(KVM_CAP_MAX_VCPUS, VM_MAX_VCPUS) */
    uint64_t mem_bytes;          /* guest RAM, >= VM_MIN_MEM, multiple of 4 KiB */
    bool sync_regs;              /* use KVM_CAP_SYNC_REGS (REGS|SREGS) when the host has it */
    int console_fd;              /* UART output; -1 discards; the fd stays owned by the caller */
    uint64_t console_max;        /* bytes of it written at most (0: CONSOLE_MAX_DEFAULT) */
    double timeout_s;            /* 0 = none */
    const struct vm_disk *disks; /* virtio block devices (vmm/disks.h), ndisks of them */
    unsigned ndisks;
    const struct net_config *net; /* --net (vmm/netdev.h); NULL: no network card */
    struct vm_hooks hooks;
};

/* Register state vCPU 0 starts with (vmm/boot fills it). sregs fields other than segments,
 * descriptor tables, control registers and EFER are taken from the vCPU's reset state. */
struct vm_entry {
    struct kvm_regs regs;
    struct kvm_sregs sregs;
};

/* One vCPU. Public (read-only for hooks): index, fd, run, tid. The rest is the VMM's. */
struct vcpu {
    int index;           /* 0 = BSP; also its initial APIC id */
    int fd;              /* vCPU fd, valid from vcpu_start to vm_destroy */
    struct kvm_run *run; /* mmap'd kvm_run of fd */
    pid_t tid;           /* kernel thread id of the vCPU thread (for SIGEV_THREAD_ID) */

    struct vm *vm;
    pthread_t thread;
    bool thread_started;
    bool use_sync_regs;         /* run->kvm_valid_regs = REGS|SREGS before every KVM_RUN */
    atomic_uint_fast64_t ticks; /* HV_SIG_TICK count not yet reported */
    struct kvm_cpuid2 *cpuid;   /* this vCPU's patched CPUID (allocated by vm_create) */
    bool joined;                /* vm_run joined the thread (false: it never came back) */

    /* For the watchdog and for fatal-exit reports (vmm/watchdog.h). Written by the vCPU
     * thread around every KVM_RUN; read by vm_run's thread. */
    _Atomic uint64_t run_enter_ns; /* CLOCK_MONOTONIC when KVM_RUN was entered, 0 outside */
    _Atomic uint64_t last_exit_ns; /* when the registers below were saved, 0 = never */
    struct kvm_regs last_regs;     /* at the last exit (with SYNC_REGS; else zero) */
    struct kvm_sregs last_sregs;
    uint32_t last_exit_reason; /* KVM_EXIT_*, KVM_EXIT_INTR for -EINTR */
    /* Exits handled in user space, by kind (vmm/exit_sites.h; the vCPU thread's, read once it
     * stopped): the VMM's own account that exit profiles are checked against. */
    uint64_t exit_counts[8];
    uint64_t kicked_for, kicked_at; /* the watchdog's own state (vm_run's thread only) */
};

struct vm {
    struct vm_config cfg;
    struct kvm_sys kvm; /* /dev/kvm fd + capabilities */
    int vm_fd;
    struct gmem gmem; /* guest RAM slots: the only way to touch guest memory */
    void *ram[2];     /* host mappings (below the MMIO gap, above 4 GiB) */
    uint64_t ram_size[2];
    struct vm_devices dev;
    struct vm_disks disks;
    struct vm_net net;

    struct vm_entry entry;
    bool has_entry;

    struct vcpu *vcpus;
    /* Start gate: every vCPU exists (and its hooks ran) before any enters KVM_RUN, so the BSP's
     * INIT/SIPI always reaches its APs. vm_run opens it. */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_cond;
    unsigned gate_arrived;
    bool gate_open;

    /* Stop protocol: the first vm_request_stop wins (stop_claim), publishes reason/status, sets
     * `stopping` and posts `wake`; vm_run's thread then kicks every vCPU. Signal-safe. */
    atomic_int stop_claim;
    atomic_bool stopping;
    struct vm_result result;
    sem_t wake;
    atomic_bool msr_warned;
    bool devices_started; /* the disks' and the network's threads (vm_start_devices) */
};

/* Create the VM: /dev/kvm, capabilities, KVM_CREATE_VM, TSS/identity map, irqchip, PIT, RAM
 * slots (registered in vm->gmem), devices, per-vCPU CPUID. No vCPU threads yet. Blocks
 * HV_SIG_KICK/HV_SIG_TICK in the calling thread and installs their handlers. */
struct vm *vm_create(const struct vm_config *cfg, struct hv_err *err);

/* Guest memory, for the loaders and the sampler. */
static inline struct gmem *vm_gmem(struct vm *vm)
{
    return &vm->gmem;
}

/* Set vCPU 0's entry state. Without it vCPU 0 starts in the architectural reset state. */
void vm_set_entry(struct vm *vm, const struct vm_entry *entry);

/* The devices' threads (each disk's I/O thread, the network's), once; vm_run does it first.
 * Made apart from vm_create so that a command creates no thread before it is confined. */
int vm_start_devices(struct vm *vm, struct hv_err *err);

/* Start the vCPU threads, wait until something stops the VM (guest exit, reset, triple fault,
 * internal error, timeout, vm_request_stop), kick and join every thread, fill *res. Returns 0
 * when the VM ran (whatever the guest did; see res), -1 with err if it could not be started. */
int vm_run(struct vm *vm, struct vm_result *res, struct hv_err *err);

/* Ask the VM to stop. Callable from any thread and from signal handlers (only atomics and
 * sem_post). The first request wins; later ones are ignored. `detail` may be NULL; it is copied
 * with a bounded loop (not from a signal handler if it may be long; NULL is always safe). */
void vm_request_stop(struct vm *vm, enum vm_stop_reason reason, int status, int vcpu,
                     const char *detail);

/* Force vCPU v out of KVM_RUN (immediate_exit + release fence + pthread_kill(HV_SIG_KICK)). */
void vcpu_kick(struct vcpu *v);

/* Guest registers of v after an exit, from run->s.regs when SYNC_REGS is on, else through
 * KVM_GET_REGS / KVM_GET_SREGS. Call only on v's own thread (e.g. from vcpu_interrupted).
 * Either pointer may be NULL. Returns 0, or -1 if an ioctl failed. */
int vcpu_get_regs(struct vcpu *v, struct kvm_regs *regs, struct kvm_sregs *sregs);

/* The profiler's view of v after an exit (guestwalk/snapshot.h), on v's own thread. `want`
 * (enum gw_snap_have) adds the optional parts: GW_SNAP_HALTED reads KVM_GET_MP_STATE, and only
 * when the vCPU is at CPL 0 (at CPL 3 it is running); GW_SNAP_MSRS reads LSTAR and
 * KERNEL_GS_BASE with one KVM_GET_MSRS. s->have says what was filled. Returns 0, or -1 if the
 * registers could not be read (an optional part that fails is just left out of s->have). */
int vcpu_snapshot(struct vcpu *v, struct gw_snapshot *s, unsigned want);

/* Close every fd, unmap RAM, free. Safe on a VM that never ran. NULL is a no-op. */
void vm_destroy(struct vm *vm);

/* Block HV_SIG_KICK and HV_SIG_TICK in the calling thread (for helper threads). */
void hv_signals_block(void);
