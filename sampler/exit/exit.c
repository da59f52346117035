/* The VMM's vcpu_interrupted hook: each forced exit. What a stop records is sample.c; this file
 * decides what the exit is (a due tick, a re-check), turns the vCPU into a snapshot, and keeps
 * the re-check timer and the stage times. Runs
 * on the vCPU's own thread while the guest is stopped: bounded work only. System calls:
 * clock_gettime (vDSO), KVM_GET_MP_STATE at kernel-mode ticks (vcpu_snapshot), timer_settime
 * while a re-check is wanted (one-shot) and when it stops being wanted, and the register ioctls
 * only without KVM_CAP_SYNC_REGS. */
#include <time.h>

#include "sampler/exit/continuation.h"
#include "sampler/exit/core.h"
#include "sampler/exit/recheck.h"

void exit_vcpu_interrupted(struct exit_core *core, struct vcpu *v, uint64_t ticks)
{
    struct exit_vcpu *sv = &core->v[v->index];
    if (ticks == 0 || atomic_load_explicit(&sv->stopped, memory_order_relaxed))
        return; /* a plain kick (stop request): nothing to sample */
    uint64_t t0 = hv_now_ns();
    sv->st.exits++;
    if (core->cfg.mode == SAMPLER_MODE_EXITS)
        return;
    uint64_t due_ns = sv->next_due_ns;
    enum exit_tick tick = exit_tick(sv, t0);
    if (tick == EXIT_TICK_NONE)
        return;
    if (tick == EXIT_TICK_DUE)
        exit_recheck_on_tick(&sv->rc, core->cfg.recheck_ns, (t0 - due_ns) % sv->period_ns);
    else
        exit_recheck_on_recheck(&sv->rc, t0, sv->period_ns);

    /* Halted or not matters only to a due kernel-mode sample: a re-check skips the ioctl. */
    struct gw_snapshot snap;
    if (vcpu_snapshot(v, &snap, tick == EXIT_TICK_DUE ? GW_SNAP_HALTED : 0) < 0)
        return;
    uint64_t t1 = hv_now_ns();
    uint64_t t2 = exit_take(sv, &snap, t0, tick == EXIT_TICK_DUE);

    /* The re-check is one-shot, armed at the end of each exit, its gap doubling while the
     * thread stays in the kernel and never under twice this exit's whole cost (recheck.h): a
     * periodic timer whose period the exits outlast fires again as the vCPU re-enters, and the
     * guest's kernel, where the thread we wait for is, gets a few instructions per exit. */
    uint64_t after = 0;
    if (sv->npend > 0 && core->cfg.recheck_ns > 0 && !sv->recheck_paused) {
        uint64_t now = hv_now_ns();
        after = exit_recheck_after(&sv->rc, now, now - t0, sv->next_due_ns);
    }
    if (after)
        exit_recheck_arm(sv, after);
    else if (sv->recheck_armed)
        exit_recheck_arm(sv, 0);

    uint64_t t3 = hv_now_ns();
    sv->st.t_regs += t1 - t0;
    sv->st.t_walk += t2 - t1;
    sv->st.t_push += t3 - t2;
    sv->st.t_total += t3 - t0;
    if (t3 - t0 > sv->st.t_max)
        sv->st.t_max = t3 - t0;
    sv->st.t_samples++;
}

/* exit_every 0: an exit's stacks are walked while the walks have taken at most a twentieth of
 * the vCPU thread's time. The budget grows by that share of the time between exits, up to
 * EXIT_STACKS_BURST_NS (a burst after a quiet spell), and each walk spends what it took. Where
 * exits are rare every one has its stacks; where they are frequent (a guest polling a port)
 * one in N, N as the walks' cost requires, and the guest is never slowed by more than that. */
#define EXIT_STACKS_SHARE    20         /* 1/20: 5 % */
#define EXIT_STACKS_BURST_NS 10000000ll /* 10 ms of walks */

bool exit_stacks_due(const struct exit_core *core, struct exit_vcpu *sv, uint64_t now)
{
    sv->exit_seq++;
    if (core->cfg.exit_every)
        return sv->exit_seq % core->cfg.exit_every == 0;
    if (!sv->exit_budget_ts)
        sv->exit_budget_ns = EXIT_STACKS_BURST_NS;
    else if (now > sv->exit_budget_ts) {
        uint64_t gain = (now - sv->exit_budget_ts) / EXIT_STACKS_SHARE;
        sv->exit_budget_ns = gain >= (uint64_t)EXIT_STACKS_BURST_NS ||
                                     sv->exit_budget_ns + (int64_t)gain > EXIT_STACKS_BURST_NS
                                 ? EXIT_STACKS_BURST_NS
                                 : sv->exit_budget_ns + (int64_t)gain;
    }
    sv->exit_budget_ts = now;
    return sv->exit_budget_ns > 0;
}

void exit_vcpu_exited(struct exit_core *core, struct vcpu *v, uint32_t site, uint64_t exit_ns,
                      uint64_t done_ns)
{
    struct exit_vcpu *sv = &core->v[v->index];
    if (!core->cfg.exit_events || atomic_load_explicit(&sv->stopped, memory_order_relaxed))
        return;
    uint64_t t0 = hv_now_ns();
    sv->st.exit_events++;
    uint64_t host_ns = done_ns > exit_ns ? done_ns - exit_ns : 0;
    /* The stacks of every exit_every-th: the guest stopped at the instruction that exited, its
     * registers already in kvm_run (KVM_CAP_SYNC_REGS), walked as a sample is. */
    struct gw_snapshot snap;
    if (exit_stacks_due(core, sv, t0) && vcpu_snapshot(v, &snap, 0) == 0) {
        sv->event = (struct exit_event){.on = true, .site = site, .host_ns = host_ns};
        exit_take(sv, &snap, exit_ns, true);
        sv->event.on = false;
        sv->st.exit_stacks++;
        sv->exit_budget_ns -= (int64_t)(hv_now_ns() - t0);
    } else {
        struct hvfxt_sample smp = {
            .fields = HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_EXIT | HVFXT_SF_EXIT_NS,
            .ts = exit_ns,
            .vcpu = sv->index,
            .exit_site = site,
            .exit_ns = host_ns,
        };
        exit_emit(sv, &smp);
    }
    sv->st.t_exit_events += hv_now_ns() - t0;
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

void exit_recheck_arm(struct exit_vcpu *sv, uint64_t after_ns)
{
    if (!sv->recheck_ok)
        return;
    struct itimerspec its = {.it_value = ts_of(after_ns)}; /* one-shot; 0 disarms */
    if (timer_settime(sv->recheck, 0, &its, NULL) == 0)
        sv->recheck_armed = after_ns != 0;
}
