/* The re-check exits' spacing (recheck.h): an exponential back-off over one stay in the guest
 * kernel, with a floor of twice the last exit's whole cost. The floor once was hvprof's own
 * handling time only; under nested virtualization (the Linux test bed: L2 under L1's KVM under
 * QEMU's TCG) the world switch around it is as long again, so a 200 us gap left the guest a few
 * microseconds per re-check while a thread stayed in its kernel, and Linux 6.1's clocksource
 * watchdog, reading kvm-clock, the TSC and kvm-clock again with interrupts off, saw three
 * read-backs in a row delayed past its 62 us limit ("kvm-clock read-back delay of 104506ns,
 * attempt 2, marking unstable"; kernel/time/clocksource.c, cs_watchdog_read()). */
#include "sampler/exit/recheck.h"

void exit_recheck_on_tick(struct exit_recheck *r, uint64_t base_ns, uint64_t late_ns)
{
    r->gap_ns = base_ns;
    r->late_ns = late_ns;
}

void exit_recheck_on_recheck(struct exit_recheck *r, uint64_t t0, uint64_t period_ns)
{
    r->late_ns = r->due_ns && t0 > r->due_ns ? t0 - r->due_ns : 0;
    r->gap_ns = r->gap_ns > period_ns / 2 ? period_ns : r->gap_ns * 2;
}

uint64_t exit_recheck_after(struct exit_recheck *r, uint64_t now, uint64_t cost_ns,
                            uint64_t next_due_ns)
{
    uint64_t floor = 2 * (cost_ns + r->late_ns);
    uint64_t after = r->gap_ns > floor ? r->gap_ns : floor;
    if (after == 0 || now + after >= next_due_ns) {
        r->due_ns = 0;
        return 0;
    }
    r->due_ns = now + after;
    return after;
}
