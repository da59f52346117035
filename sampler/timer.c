/* Per-vCPU sampling timers. CLOCK_MONOTONIC POSIX timers aimed at one vCPU thread
 * (SIGEV_THREAD_ID, HV_SIG_TICK): per-thread CPU-time timers only tick at the host's 250 Hz
 * here (docs/sources.md §1). The VMM's handler sets immediate_exit, so a tick that arrives
 * between two KVM_RUN calls is not lost.
 *
 * Two timers per vCPU: the periodic sampling timer, started at a random offset within one
 * period so vCPUs (and the guest's own periodic timers) do not tick in lockstep, and the
 * re-check timer, armed only while a continuation is open, which brings an exit soon after the
 * guest thread returns to user mode (docs/sampling.md). */
#include <signal.h>
#include <string.h>
#include <time.h>

#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"

static int make_timer(timer_t *t, pid_t tid, struct hv_err *err)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = HV_SIG_TICK;
    sev._sigev_un._tid = tid;
    if (timer_create(CLOCK_MONOTONIC, &sev, t) < 0)
        return hv_errf_errno(err, "timer_create");
    return 0;
}

static struct timespec ts_of(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
                             .tv_nsec = (long)(ns % 1000000000ull)};
}

/* xorshift64*: a different first expiry per vCPU and per run; not for security. */
static uint64_t random_below(uint64_t seed, uint64_t bound)
{
    uint64_t x = seed | 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    x *= 0x2545f4914f6cdd1dull;
    return bound ? x % bound : 0;
}

int sampler_timers_create(struct exit_vcpu *sv, pid_t tid, struct hv_err *err)
{
    uint64_t period = sv->period_ns;
    if (make_timer(&sv->timer, tid, err) < 0)
        return -1;
    sv->timer_ok = true;
    uint64_t now = hv_now_ns();
    uint64_t first = now + 1 + random_below(now ^ ((uint64_t)sv->index << 40), period);
    sv->next_due_ns = first;
    struct itimerspec its = {.it_value = ts_of(first), .it_interval = ts_of(period)};
    if (timer_settime(sv->timer, TIMER_ABSTIME, &its, NULL) < 0)
        return hv_errf_errno(err, "timer_settime");
    if (sv->core->cfg.recheck_ns && sv->core->cfg.mode != SAMPLER_MODE_EXITS) {
        if (make_timer(&sv->recheck, tid, err) < 0)
            return -1;
        sv->recheck_ok = true;
    }
    return 0;
}

void sampler_timers_delete(struct exit_vcpu *sv)
{
    if (sv->timer_ok) {
        timer_delete(sv->timer);
        sv->timer_ok = false;
    }
    if (sv->recheck_ok) {
        timer_delete(sv->recheck);
        sv->recheck_ok = false;
        sv->recheck_armed = false;
    }
}
