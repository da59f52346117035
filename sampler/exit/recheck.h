/* When the next re-check exit comes (docs/sampling.md, "Re-checks"). A re-check is an exit taken
 * between sampling ticks only to see whether a thread sampled in the guest kernel is back in
 * user mode, where its user stack is walked (RFC-0274's continuation). Each one stops the vCPU,
 * so the policy bounds what they take from the guest:
 *
 *   - the first comes `base` (--recheck) after the tick that opened the wait;
 *   - each re-check that finds the thread still in the kernel doubles the gap, up to the
 *     sampling period (a tick comes by then anyway): a long stay in the kernel costs
 *     log2(stay / base) re-checks, not stay / base;
 *   - the guest always runs at least twice what the last exit cost, counting both hvprof's
 *     handling and how late the re-check's exit reached hvprof after its timer expired (the
 *     world switch, which under nested virtualization is as long as the handling itself).
 *
 * Pure arithmetic, no system call: the exit path calls it, the unit test drives it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct exit_recheck {
    uint64_t gap_ns;  /* the gap the next re-check is armed at, before the cost floor */
    uint64_t due_ns;  /* when the armed re-check expires (CLOCK_MONOTONIC); 0: none armed */
    uint64_t late_ns; /* how late the last re-check's exit reached hvprof after due_ns */
};

/* A due tick that reached hvprof late_ns after its timer expired (the gap starts again at base),
 * or a re-check exit at t0 (the gap doubles, and its lateness is noted), before the exit is
 * handled. */
void exit_recheck_on_tick(struct exit_recheck *r, uint64_t base_ns, uint64_t late_ns);
void exit_recheck_on_recheck(struct exit_recheck *r, uint64_t t0, uint64_t period_ns);

/* How long after `now` to arm the re-check for an exit that cost `cost_ns` so far; 0: none,
 * because the sampling tick at next_due_ns comes first. */
uint64_t exit_recheck_after(struct exit_recheck *r, uint64_t now, uint64_t cost_ns,
                            uint64_t next_due_ns);
