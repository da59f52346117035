/* The VMM's hooks: the vCPU thread's start, each forced exit, its stop. What a stop records is
 * sample.c; this file turns a vCPU into a snapshot and keeps the timers and stage times. Runs
 * on the vCPU's own thread while the guest is stopped: bounded work only. System calls:
 * clock_gettime (vDSO), KVM_GET_MP_STATE at kernel-mode ticks (vcpu_snapshot), timer_settime
 * when the re-check timer toggles, and the register ioctls only without KVM_CAP_SYNC_REGS. */
#include "sampler/sampler_priv.h"

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
    enum sampler_tick tick = sampler_tick(sv, t0);
    if (tick == SAMPLER_TICK_NONE)
        return;

    /* Halted or not matters only to a due kernel-mode sample: a re-check skips the ioctl. */
    struct gw_snapshot snap;
    if (vcpu_snapshot(v, &snap, tick == SAMPLER_TICK_DUE ? GW_SNAP_HALTED : 0) < 0)
        return;
    uint64_t t1 = sampler_now_ns();
    uint64_t t2 = sampler_take(sv, &snap, t0, tick == SAMPLER_TICK_DUE);

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
    if (sampler_vcpu_prepare(sv, err) < 0 || sampler_timers_create(sv, v->tid, err) < 0)
        return hv_err_prefix(err, "vcpu%d", v->index);
    return 0;
}

void sampler_vcpu_stop(void *ctx, struct vcpu *v)
{
    struct sampler *s = ctx;
    struct sampler_vcpu *sv = &s->v[v->index];
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        sv->st.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
    /* LSTAR - entry_SYSCALL_64 is a Linux guest's KASLR slide (docs/linux.md): read at the
     * end, when the guest has set it. */
    struct gw_snapshot snap;
    if (v->index == 0 && vcpu_snapshot(v, &snap, GW_SNAP_MSRS) == 0 && (snap.have & GW_SNAP_MSRS))
        atomic_store(&s->lstar, snap.lstar);
    atomic_store(&sv->stopped, true);
    sampler_timers_delete(sv);
    sampler_continuations_end(sv, sampler_now_ns());
    if (sv->walker_ok) {
        gw_walker_fini(&sv->walker);
        sv->walker_ok = false;
    }
}
