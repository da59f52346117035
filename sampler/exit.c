/* The vCPU exit path: everything here runs on the vCPU's own thread while the guest is stopped.
 * Bounded work only: no allocation, no locks, no I/O (the ring is lock-free, the identity table
 * is CAS-only, the walker is preallocated). System calls: clock_gettime (vDSO), KVM_GET_MP_STATE
 * at kernel-mode ticks, timer_settime when the re-check timer toggles, and the register ioctls
 * only when the host lacks KVM_CAP_SYNC_REGS. */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "schema/encode.h"
#include "sampler/sampler_priv.h"

static unsigned stop_code(const struct gw_stack *st)
{
    switch (st->stop) {
    case GW_STOP_CHAIN_END:
        return HVFXT_STOP_END;
    case GW_STOP_DEPTH_CAP:
        return HVFXT_STOP_MAX_DEPTH;
    case GW_STOP_UNMAPPED:
        return HVFXT_STOP_UNMAPPED;
    case GW_STOP_INVALID_FRAME:
        return st->bad == GW_BAD_NOT_INCREASING ? HVFXT_STOP_NOT_UPWARD : HVFXT_STOP_BAD_FP;
    case GW_STOP_NONE:
        return HVFXT_STOP_NONE;
    default:
        return HVFXT_STOP_ERROR;
    }
}

static void emit(struct sampler_vcpu *sv, const struct hvfxt_sample *smp)
{
    size_t n = hvfxt_sample_words(smp);
    uint64_t *slot = fxt_ring_reserve(&sv->ring, (uint32_t)n, smp->ts);
    if (!slot)
        return; /* dropped and counted by the ring; a loss record will say so */
    size_t w = hvfxt_enc_sample(slot, n, smp);
    fxt_ring_commit(&sv->ring, (uint32_t)w);
    sv->st.records++;
}

/* Continuations. Each guest thread has one shared slot (identity.h): a kernel-mode sample of a
 * user thread opens a continuation there (or reuses the open one), and the first exit on ANY
 * vCPU that finds the thread back in user mode takes the slot (CAS) and writes the completion.
 * Each vCPU also keeps a local list of the continuations its own samples carried: it re-checks
 * often while the list is not empty, and abandons what stays open too long. Whoever wins the CAS
 * on the slot writes the single completion (with a stack, or abandoned). */

static void pending_drop(struct sampler_vcpu *sv, struct pending *p)
{
    p->used = false;
    sv->npend--;
}

static struct pending *pending_find(struct sampler_vcpu *sv, uint64_t id)
{
    for (unsigned i = 0; i < SAMPLER_MAX_PENDING; i++)
        if (sv->pend[i].used && sv->pend[i].id == id)
            return &sv->pend[i];
    return NULL;
}

/* A completion record without a stack: the thread never came back to user mode in time. */
static void write_abandoned(struct sampler_vcpu *sv, const struct pending *p, uint64_t now,
                            unsigned why)
{
    struct hvfxt_sample c = {
        .fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_PID | HVFXT_SF_TID |
                  HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_WALK,
        .completion = p->id,
        .pid = hvfxt_koid_guest_process(p->proc),
        .tid = hvfxt_koid_guest_thread(p->thread),
        .ts = now,
        .vcpu = sv->index,
        .walk = hvfxt_walk_word(HVFXT_STOP_NONE, why, 0, 0),
    };
    emit(sv, &c);
    sv->st.abandoned++;
    if (why == HVFXT_STOP_ABANDONED_TIMEOUT)
        sv->st.abandoned_timeout++;
    else if (why == HVFXT_STOP_ABANDONED_END)
        sv->st.abandoned_end++;
    else
        sv->st.abandoned_full++;
}

/* Abandon p if it is still open (nobody completed it elsewhere), then forget it locally. */
static void pending_abandon(struct sampler_vcpu *sv, struct pending *p, uint64_t now, unsigned why)
{
    _Atomic uint64_t *slot = id_thread_cont(sv->s->ids, p->thread);
    uint64_t expected = p->id;
    if (slot && atomic_compare_exchange_strong(slot, &expected, 0))
        write_abandoned(sv, p, now, why);
    pending_drop(sv, p);
}

/* Forget local entries completed elsewhere; abandon those open longer than the bound. The
 * bound counts this vCPU's ticks, not wall time: when the host does not run the vCPU thread
 * (missed ticks), the guest does not run either, and its threads get no older. */
static void expire_pending(struct sampler_vcpu *sv, uint64_t now)
{
    uint64_t bound = sv->abandon_ticks;
    for (unsigned i = 0; i < SAMPLER_MAX_PENDING && sv->npend; i++) {
        struct pending *p = &sv->pend[i];
        if (!p->used)
            continue;
        _Atomic uint64_t *slot = id_thread_cont(sv->s->ids, p->thread);
        if (!slot || atomic_load(slot) != p->id)
            pending_drop(sv, p);
        else if (sv->ticks_taken - p->opened_tick > bound)
            pending_abandon(sv, p, now, HVFXT_STOP_ABANDONED_TIMEOUT);
    }
}

/* The continuation id a kernel-mode sample of (proc, thread) carries: the thread's open one, or
 * a new one. Also remembered locally (re-check timer, expiry). */
static uint64_t continuation_for(struct sampler_vcpu *sv, uint32_t proc, uint32_t thread,
                                 uint64_t now)
{
    sv->recheck_paused = false; /* a thread of ours is in the kernel here: look for its return */
    _Atomic uint64_t *slot = id_thread_cont(sv->s->ids, thread);
    if (!slot)
        return 0;
    uint64_t id = atomic_load(slot);
    uint64_t opened = now;
    if (id == 0) {
        uint64_t fresh = ((uint64_t)sv->index << 56) | (++sv->cont_counter & ((1ull << 56) - 1));
        uint64_t expected = 0;
        id = atomic_compare_exchange_strong(slot, &expected, fresh) ? fresh : expected;
    }
    if (id == 0)
        return 0;
    struct pending *p = pending_find(sv, id);
    if (p) {
        p->samples++;
        return id;
    }
    struct pending *free_slot = NULL, *oldest = NULL;
    for (unsigned i = 0; i < SAMPLER_MAX_PENDING; i++) {
        struct pending *q = &sv->pend[i];
        if (!q->used) {
            if (!free_slot)
                free_slot = q;
        } else if (!oldest || q->opened_ns < oldest->opened_ns) {
            oldest = q;
        }
    }
    if (!free_slot) { /* every local slot busy: the oldest gives way, abandoned with the reason */
        pending_abandon(sv, oldest, now, HVFXT_STOP_ABANDONED_FULL);
        free_slot = oldest;
    }
    *free_slot = (struct pending){
        .used = true,
        .id = id,
        .proc = proc,
        .thread = thread,
        .opened_ns = opened,
        .opened_tick = sv->ticks_taken,
        .samples = 1,
    };
    sv->npend++;
    return id;
}

static void cpu_from_regs(struct gw_cpu *c, const struct kvm_regs *r, const struct kvm_sregs *sr)
{
    *c = (struct gw_cpu){
        .rip = r->rip,
        .rsp = r->rsp,
        .rbp = r->rbp,
        .cr0 = sr->cr0,
        .cr3 = sr->cr3,
        .cr4 = sr->cr4,
        .efer = sr->efer,
        .cpl = (uint8_t)(sr->cs.selector & 3),
    };
}

/* Is the vCPU idle: halted in HLT, or an AP still waiting for INIT/SIPI? Asked only for
 * kernel-mode ticks (api.rst 4.38 KVM_GET_MP_STATE). */
static bool vcpu_not_running(struct vcpu *v)
{
    struct kvm_mp_state mp;
    if (ioctl(v->fd, KVM_GET_MP_STATE, &mp) < 0)
        return false;
    return mp.mp_state != KVM_MP_STATE_RUNNABLE;
}

void sampler_vcpu_interrupted(void *ctx, struct vcpu *v, uint64_t ticks)
{
    struct sampler *s = ctx;
    struct sampler_vcpu *sv = &s->v[v->index];
    if (ticks == 0 || atomic_load_explicit(&sv->stopped, memory_order_relaxed))
        return; /* a plain kick (stop request): nothing to sample */
    uint64_t t0 = sampler_now_ns();
    sv->st.exits++;
    if (s->cfg.mode == SAMPLER_MODE_EXITS)
        return;

    /* Regular tick or re-check? The sampling timer expires at next_due + k * period exactly
     * (absolute CLOCK_MONOTONIC), so time alone tells, whichever timer's signal woke us. */
    bool due = t0 >= sv->next_due_ns;
    if (due) {
        uint64_t late = (t0 - sv->next_due_ns) / sv->period_ns;
        sv->st.missed += late;
        sv->next_due_ns += (late + 1) * sv->period_ns;
        sv->ticks_taken++;
    } else if (sv->npend == 0) {
        return; /* a re-check signal that was already in flight */
    } else {
        sv->st.rechecks++;
    }

    struct kvm_regs regs;
    struct kvm_sregs sregs;
    if (vcpu_get_regs(v, &regs, &sregs) < 0)
        return;
    uint64_t t1 = sampler_now_ns();

    struct gw_cpu cpu;
    cpu_from_regs(&cpu, &regs, &sregs);
    /* One address space per process, whichever half of a PTI pair CR3 holds now. */
    uint64_t root =
        pti_canonical_root(&sv->pti, vm_gmem(s->vm), id_cr3_root(sregs.cr3), ID_CR3_ADDR_MASK);
    struct id_proc_info info = {sregs.cr0, root, sregs.cr4, sregs.efer, t0};
    uint32_t proc = id_proc_get(s->ids, root, &info);
    uint32_t thread = id_thread_get(s->ids, proc, sregs.fs.base, t0);
    uint64_t pid = hvfxt_koid_guest_process(proc), tid = hvfxt_koid_guest_thread(thread);

    struct gw_stack ustack = GW_STACK_INIT(sv->frames_u, s->cfg.max_depth);
    if (cpu.cpl == 3) {
        id_thread_mark_user(s->ids, thread);
        _Atomic uint64_t *slot = id_thread_cont(s->ids, thread);
        uint64_t cont = slot ? atomic_load(slot) : 0;
        /* Back in user mode with the same identity: take the thread's open continuation (one
         * winner if several vCPUs race) and complete it with this user stack. */
        if (cont && !atomic_compare_exchange_strong(slot, &cont, 0))
            cont = 0;
        if (cont || due) {
            gw_walker_begin(&sv->walker, &cpu);
            gw_unwind(&sv->walker, &ustack);
            if (ustack.stop != GW_STOP_CHAIN_END && ustack.stop != GW_STOP_DEPTH_CAP)
                sv->st.walk_fail++;
        }
        if (cont) {
            /* RFC-0274 continuation_completion: this user stack completes every partial record
             * that carried `cont`, on whichever vCPU they were taken. */
            struct hvfxt_sample c = {
                .fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_PID | HVFXT_SF_TID |
                          HVFXT_SF_BOOT_TS | HVFXT_SF_USER_STACK | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                          HVFXT_SF_WALK,
                .completion = cont,
                .pid = pid,
                .tid = tid,
                .ts = t0,
                .user_stack = ustack.pc,
                .n_user = ustack.count,
                .vcpu = sv->index,
                .cpl = 3,
                .walk = hvfxt_walk_word(HVFXT_STOP_NONE, stop_code(&ustack), 0, 0),
            };
            emit(sv, &c);
            sv->st.completed++;
            struct pending *p = pending_find(sv, cont);
            if (p)
                pending_drop(sv, p);
        }
    }
    if (sv->npend)
        expire_pending(sv, t0);
    uint64_t t2 = sampler_now_ns();

    if (due) {
        struct hvfxt_sample smp = {
            .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU |
                      HVFXT_SF_CPL | HVFXT_SF_PC | HVFXT_SF_WALK,
            .pid = pid,
            .tid = tid,
            .ts = t0,
            .vcpu = sv->index,
            .cpl = cpu.cpl,
            .pc = cpu.rip,
        };
        if (cpu.cpl == 3) {
            smp.fields |= HVFXT_SF_USER_STACK;
            smp.user_stack = ustack.pc;
            smp.n_user = ustack.count;
            smp.walk = hvfxt_walk_word(HVFXT_STOP_NONE, stop_code(&ustack), 0, 0);
            sv->st.user++;
            emit(sv, &smp);
        } else {
            bool halted = vcpu_not_running(v);
            if (halted && s->cfg.mode == SAMPLER_MODE_CPU) {
                sv->st.idle++;
            } else {
                /* Kernel mode: the kernel half is always mapped, so walk it now; the user
                 * stack waits for the return to user mode. An idle (halted) vCPU never returns
                 * to a user thread from here, so it opens no continuation. */
                struct gw_stack kstack = GW_STACK_INIT(sv->frames_k, s->cfg.max_depth);
                gw_walker_begin(&sv->walker, &cpu);
                gw_unwind(&sv->walker, &kstack);
                if (kstack.stop != GW_STOP_CHAIN_END && kstack.stop != GW_STOP_DEPTH_CAP)
                    sv->st.walk_fail++;
                smp.fields |= HVFXT_SF_KERNEL_STACK;
                smp.kernel_stack = kstack.pc;
                smp.n_kernel = kstack.count;
                /* Only a thread known to run in user mode will come back there: kernel
                 * threads (and a thread's very first sample, if it is in the kernel) carry
                 * the kernel stack alone. */
                unsigned ustop = HVFXT_STOP_NONE;
                if (!halted && id_thread_is_user(s->ids, thread)) {
                    smp.continuation = continuation_for(sv, proc, thread, t0);
                    if (smp.continuation) {
                        smp.fields |= HVFXT_SF_CONTINUATION;
                        ustop = HVFXT_STOP_DEFERRED;
                    }
                }
                smp.walk = hvfxt_walk_word(stop_code(&kstack), ustop, 0, 0);
                if (halted)
                    sv->st.idle++;
                else
                    sv->st.kernel++;
                emit(sv, &smp);
            }
        }
    }

    /* A re-check that finds another thread in user mode means ours is not on this vCPU (it
     * waits in the guest's run queue, or migrated): stop re-checking until a tick sees one of
     * our threads in the kernel again, instead of paying an exit every re-check period. */
    if (!due && cpu.cpl == 3 && sv->npend > 0)
        sv->recheck_paused = true;
    bool want_recheck = sv->npend > 0 && s->cfg.recheck_ns > 0 && !sv->recheck_paused;
    if (want_recheck != sv->recheck_armed)
        sampler_recheck_arm(sv, want_recheck);

    uint64_t t3 = sampler_now_ns();
    sv->st.t_regs += t1 - t0;
    sv->st.t_walk += t2 - t1;
    sv->st.t_push += t3 - t2;
    sv->st.t_total += t3 - t0;
    if (t3 - t0 > sv->st.t_max)
        sv->st.t_max = t3 - t0;
    sv->st.t_samples++;
}

int sampler_vcpu_start(void *ctx, struct vcpu *v, struct hv_err *err)
{
    struct sampler *s = ctx;
    if ((unsigned)v->index >= s->cfg.nvcpus)
        return hv_errf(err, "sampler: vCPU %d was not configured", v->index);
    struct sampler_vcpu *sv = &s->v[v->index];
    if (s->cfg.mode != SAMPLER_MODE_EXITS) {
        struct gw_config gc = {
            .max_depth = s->cfg.max_depth,
            .no_leaf_repair = s->cfg.no_leaf_repair,
        };
        if (gw_walker_init(&sv->walker, vm_gmem(s->vm), &gc, err) < 0)
            return hv_err_prefix(err, "vcpu%d", v->index);
        sv->walker_ok = true;
    }
    if (sampler_timers_create(sv, v->tid, err) < 0)
        return hv_err_prefix(err, "vcpu%d", v->index);
    return 0;
}

/* MSR_LSTAR (SDM Vol. 4, 0xC0000082): the guest's syscall entry. For a Linux guest,
 * LSTAR - entry_SYSCALL_64 is the KASLR slide (guest-profiling.md 3.3), so `report` can use a
 * vmlinux or System.map of the same kernel. Read at the end, when the guest has set it. */
static uint64_t read_lstar(struct vcpu *v)
{
    /* struct kvm_msrs ends in a flexible array: one entry right behind it (api.rst 4.18). */
    uint64_t buf[(sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)) / 8 + 1];
    memset(buf, 0, sizeof(buf));
    struct kvm_msrs *m = (struct kvm_msrs *)buf;
    m->nmsrs = 1;
    m->entries[0].index = 0xc0000082;
    if (ioctl(v->fd, KVM_GET_MSRS, m) != 1)
        return 0;
    return m->entries[0].data;
}

void sampler_vcpu_stop(void *ctx, struct vcpu *v)
{
    struct sampler *s = ctx;
    struct sampler_vcpu *sv = &s->v[v->index];
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        sv->st.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
    if (v->index == 0)
        atomic_store(&s->lstar, read_lstar(v));
    atomic_store(&sv->stopped, true);
    sampler_timers_delete(sv);
    /* The session ends with these threads still in the kernel: every continuation still open
     * is completed as abandoned, so no partial record is left without its completion. */
    uint64_t now = sampler_now_ns();
    for (unsigned i = 0; i < SAMPLER_MAX_PENDING && sv->npend; i++) {
        if (sv->pend[i].used)
            pending_abandon(sv, &sv->pend[i], now, HVFXT_STOP_ABANDONED_END);
    }
    if (sv->walker_ok) {
        gw_walker_fini(&sv->walker);
        sv->walker_ok = false;
    }
}
