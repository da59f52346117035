/* The VMM's vcpu_interrupted hook: each forced exit. What a stop records is sample.c; this file
 * decides what the exit is (a due tick, a re-check), turns the vCPU into a snapshot, and keeps
 * the re-check timer and the stage times. Runs
 * on the vCPU's own thread while the guest is stopped: bounded work only. System calls:
 * clock_gettime (vDSO), KVM_GET_MP_STATE at kernel-mode ticks (vcpu_snapshot), timer_settime
 * when the re-check timer toggles, and the register ioctls only without KVM_CAP_SYNC_REGS. */
#include <time.h>

#include "sampler/exit/continuation.h"
#include "sampler/exit/core.h"

void exit_vcpu_interrupted(struct exit_core *s, struct vcpu *v, uint64_t ticks)
{
    struct exit_vcpu *sv = &s->v[v->index];
    if (ticks == 0 || atomic_load_explicit(&sv->stopped, memory_order_relaxed))
        return; /* a plain kick (stop request): nothing to sample */
    uint64_t t0 = hv_now_ns();
    sv->st.exits++;
    if (s->cfg.mode == SAMPLER_MODE_EXITS)
        return;
    enum exit_tick tick = exit_tick(sv, t0);
    if (tick == EXIT_TICK_NONE)
        return;

    /* Halted or not matters only to a due kernel-mode sample: a re-check skips the ioctl. */
    struct gw_snapshot snap;
    if (vcpu_snapshot(v, &snap, tick == EXIT_TICK_DUE ? GW_SNAP_HALTED : 0) < 0)
        return;
    uint64_t t1 = hv_now_ns();
    uint64_t t2 = exit_take(sv, &snap, t0, tick == EXIT_TICK_DUE);

    bool want_recheck = sv->npend > 0 && s->cfg.recheck_ns > 0 && !sv->recheck_paused;
    if (want_recheck != sv->recheck_armed)
        exit_recheck_arm(sv, want_recheck);

    uint64_t t3 = hv_now_ns();
    sv->st.t_regs += t1 - t0;
    sv->st.t_walk += t2 - t1;
    sv->st.t_push += t3 - t2;
    sv->st.t_total += t3 - t0;
    if (t3 - t0 > sv->st.t_max)
        sv->st.t_max = t3 - t0;
    sv->st.t_samples++;
}

/* Regular tick or re-check? The sampling timer expires at next_due + k * period exactly
 * (absolute CLOCK_MONOTONIC), so time alone tells, whichever timer's signal woke us. */
enum exit_tick exit_tick(struct exit_vcpu *sv, uint64_t now)
{
    if (now >= sv->next_due_ns) {
        uint64_t late = (now - sv->next_due_ns) / sv->period_ns;
        sv->st.missed += late;
        sv->next_due_ns += (late + 1) * sv->period_ns;
        sv->ticks_taken++;
        return EXIT_TICK_DUE;
    }
    if (sv->npend == 0)
        return EXIT_TICK_NONE; /* a re-check signal that was already in flight */
    sv->st.rechecks++;
    return EXIT_TICK_RECHECK;
}

static struct timespec ts_of(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
                             .tv_nsec = (long)(ns % 1000000000ull)};
}

void exit_recheck_arm(struct exit_vcpu *sv, bool on)
{
    if (!sv->recheck_ok)
        return;
    uint64_t p = on ? sv->core->cfg.recheck_ns : 0;
    struct itimerspec its = {.it_value = ts_of(p), .it_interval = ts_of(p)};
    if (timer_settime(sv->recheck, 0, &its, NULL) == 0)
        sv->recheck_armed = on;
}
