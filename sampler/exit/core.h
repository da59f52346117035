/* The exit core: what runs on a vCPU's own thread at each forced exit while the guest is
 * stopped (docs/architecture.md, "One sample, from the timer to the file"). The tick, the
 * vCPU snapshot, the guest identity (id tables), the user and kernel walks, the one
 * continuation store, and the record into the vCPU's ring.
 *
 * Its rules are the build's: no allocation, no lock, no I/O. Its objects may not reference an
 * allocator, a lock or a file or stream call (cmake/check_exit_core.cmake runs on every build
 * of the library); it may include only what it links (guestos, guestwalk, schema, fxt, vmm's
 * vCPU snapshot, common). Everything it shares with the recorder (sampler/, the drain thread)
 * is a typed hand-off: the vCPU's ring (fxt/ring.h), the id tables (id_table.h, lock-free),
 * the per-process unwind maps the recorder publishes (cfi_maps.h, immutable once published),
 * and the vCPU's counters, read once the vCPU stopped. The recorder allocates all of it. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/clock.h"
#include "fxt/ring.h"
#include "guestos/guestos.h"
#include "guestwalk/snapshot.h"
#include "guestwalk/walker.h"
#include "sampler/exit/cfi_maps.h"
#include "sampler/exit/id_table.h"
#include "sampler/exit/mode.h"
#include "sampler/exit/recheck.h"
#include "runtime/runtime.h"
#include "sampler/exit/copy_queue.h"
#include "sampler/exit/group_table.h"
#include "schema/encode.h"
#include "vmm/vcpu.h"

#define EXIT_MAX_PENDING 8 /* open continuations per vCPU (distinct guest threads) */
#define EXIT_MAX_FRAMES  1000

/* What the exit path needs of the recording's settings. */
struct exit_config {
    enum sampler_mode mode;
    unsigned max_depth;     /* frames per stack, 1..EXIT_MAX_FRAMES */
    uint64_t recheck_ns;    /* re-check period while a continuation is open; 0 = none */
    bool defer_user_stacks; /* user stacks of kernel samples only through a continuation */
    /* Exit events (`record --events exits`, docs/exits.md): a record for each exit the VMM
     * handles, with the guest's stacks at every exit_every-th of a vCPU's; 0: while their walks
     * stay within EXIT_STACKS_SHARE of the vCPU's time (exit.c). */
    bool exit_events;
    unsigned exit_every;
};

/* The exit event a stop is taken for (exit_vcpu_exited), or none (a timer's stop). */
struct exit_event {
    bool on;
    uint32_t site;
    uint64_t host_ns;
};

/* An RFC-0274 continuation this vCPU's samples carried: kernel-mode samples of one guest thread
 * waiting for its return to user mode, when the user stack is walked and one completion record
 * closes them all (continuation.c). */
struct exit_pending {
    bool used;
    uint64_t id; /* continuation id: vCPU index in the top byte, a counter below */
    uint32_t proc, thread;
    uint64_t opened_ns;
    uint64_t opened_tick; /* this vCPU's tick count when it first saw the continuation */
    uint32_t samples;     /* partial records sharing the id */
};

/* Per-vCPU counters, written only by that vCPU's thread, read after it stopped (or racily for
 * the progress line, which is fine for a display). */
struct vcpu_stats {
    uint64_t user, kernel, idle;   /* samples by where the vCPU was */
    uint64_t missed;               /* periods that passed without an exit (late timer) */
    uint64_t completed, abandoned; /* continuations */
    uint64_t abandoned_timeout, abandoned_end, abandoned_full;
    uint64_t rechecks;     /* exits taken only to look for a return to user mode */
    uint64_t exits;        /* every timer exit seen */
    uint64_t records;      /* records committed to the ring */
    uint64_t walk_fail;    /* stacks that ended on a fault or invalid frame */
    uint64_t task_unknown; /* stops whose guest task the OS layer could not read */
    /* Stops whose process or thread found no slot in the identity tables: their samples go to
     * the unattributed identity, never the kernel's. */
    uint64_t unattributed;
    /* Kernel samples of user threads whose kernel walk reached the user entry frame (the exact
     * user PC at kernel entry), and of those whose user stack was walked from there at once. */
    uint64_t user_entry, user_at_entry;
    /* User walks with frames from DWARF CFI, those frames, walks that met a module's code
     * without a rule (frame pointers there), walks stopped at a rule they cannot evaluate. */
    uint64_t cfi_walks, cfi_frames, cfi_gaps, cfi_rule_stops;
    /* User stacks copied for a walk later (stack_copy.h); walks that wanted a copy but found
     * the queue full. */
    uint64_t copies, copies_full;
    /* Samples that carried runtime frames (runtime_stack.h), those frames, the samples of
     * processes with a runtime published (its exit half's reads), and their time. */
    uint64_t rt_samples, rt_frames, rt_reads, t_rt;
    /* Exit events recorded, those with the guest's stacks, and hvprof's time on them (ns). */
    uint64_t exit_events, exit_stacks, t_exit_events;
    /* The VMM's own count of the exits it handled, by kind (vmm/exit_sites.h), copied at the
     * vCPU's stop (the VM is gone when the summary is printed). */
    uint64_t vmm_exits[8];
    /* time spent in the exit hook, and its parts (ns) */
    uint64_t t_total, t_max, t_regs, t_walk, t_push;
    uint64_t t_samples; /* exits the totals above cover */
    uint64_t cpu_ns;    /* the vCPU thread's CPU time (guest time included), at its stop */
    /* Steal time: the vCPU thread runnable but not running on the host, and the wall time it
     * covers, from its start to its stop (sampler/parts/thread_sched.h; 0 and false where /proc
     * does not say). wait0_ns and wall0_ns are the values at its start. */
    uint64_t steal_ns, wall_ns, wait0_ns, wall0_ns;
    bool steal_known;
    int sched_fd; /* the thread's own schedstat, opened at its start (read again at its stop,
                   * when a confined vCPU thread may open nothing; -1: none) */
    /* The vCPU thread's host tid, stored (release) once wait0_ns is set: the drain thread then
     * reads the thread's run-queue wait as it goes (sampler/sources/steal/steal_timeline.c). 0: not
     * yet. */
    _Atomic int host_tid;
};

struct exit_core;

/* One vCPU's exit-path state. The recorder sets it up before the vCPU runs (its ring, walker,
 * timers, period) and reads its counters and ring; the vCPU thread alone writes the rest. */
struct exit_runtimes; /* runtime_stack.h */

struct exit_vcpu {
    struct exit_core *core;
    unsigned index;
    struct fxt_ring ring;
    struct gw_walker walker;
    bool walker_ok;
    timer_t timer, recheck;
    bool timer_ok, recheck_ok, recheck_armed;
    uint64_t next_due_ns; /* the sampling timer's next expiry (absolute CLOCK_MONOTONIC) */
    uint64_t period_ns;
    uint64_t cont_counter;
    uint64_t ticks_taken;   /* due ticks this vCPU handled: the clock continuations age by */
    uint64_t abandon_ticks; /* max(--abandon-periods, SAMPLER_ABANDON_MIN_NS worth of ticks) */
    bool recheck_paused;    /* a re-check found another thread in user mode here */
    struct exit_recheck rc; /* the next re-check's spacing (recheck.h) */
    struct guestos_vcpu os; /* the OS layer's state for this vCPU (PTI pairs seen, ...) */
    struct exit_pending pend[EXIT_MAX_PENDING];
    unsigned npend;
    struct exit_copy_queue copies; /* stacks to walk later (stack_copy.h) */
    struct exit_event event;       /* set while an exit event's stop is taken */
    uint64_t exit_seq;             /* exit events of this vCPU so far */
    int64_t exit_budget_ns;        /* exit_every 0: walk time left to spend (exit.c) */
    uint64_t exit_budget_ts;       /* when it was last topped up (0: never) */
    struct vcpu_stats st;
    uint64_t frames_k[EXIT_MAX_FRAMES];
    uint64_t frames_u[EXIT_MAX_FRAMES];
    uint64_t rt[1 + 2 * RUNTIME_MAX_FRAMES]; /* this stop's runtime frames (runtime_stack.h) */
    uint32_t n_rt;                           /* words of rt */
    uint32_t group;                          /* this stop's group number (group_table.h), 0 */
    _Atomic bool stopped;
    _Atomic uint64_t grace_seq; /* odd while a stop uses the tables (grace.h) */
};

/* The exit path's view of a recording: set up by the recorder, read by every vCPU thread. */
struct exit_core {
    struct exit_config cfg;
    const struct guestos *os;        /* what the guest's OS tells (identify, unwind) */
    struct id_table *ids;            /* guest identities, shared with the drain thread */
    const struct exit_cfi_maps *cfi; /* published unwind maps; NULL: frame pointers only */
    const struct exit_runtimes *rt;  /* published language runtimes; NULL: none read */
    struct group_table *groups;      /* control groups of samples; NULL: not recorded */
    struct exit_vcpu *v;
    unsigned nvcpus;
};

/* exit.c: the VMM's vcpu_interrupted hook (vmm/vm.h) with the core as its context: the tick,
 * the snapshot, the sample, the re-check timer and the stage times. */
void exit_vcpu_interrupted(struct exit_core *core, struct vcpu *v, uint64_t ticks);
/* exit.c: the VMM's vcpu_exited hook (vmm/vm.h): an exit event's record, with the guest's
 * stacks at every exit_every-th (docs/exits.md). */
void exit_vcpu_exited(struct exit_core *core, struct vcpu *v, uint32_t site, uint64_t exit_ns,
                      uint64_t done_ns);
/* Whether the exit at `now` of vCPU sv gets its stacks walked (cfg.exit_every; 0: the walk-time
 * budget, which the caller charges for the walk: sv->exit_budget_ns -= its time). */
bool exit_stacks_due(const struct exit_core *core, struct exit_vcpu *sv, uint64_t now);
/* exit.c: arm or disarm the vCPU's re-check timer (timer_settime, the one system call here
 * besides the snapshot's). */
void exit_recheck_arm(struct exit_vcpu *sv, uint64_t after_ns); /* one-shot; 0 disarms */

/* sample.c: one stop turned into records (tests drive these with saved snapshots). */
enum exit_tick {
    EXIT_TICK_NONE,    /* nothing to do: a re-check signal already in flight */
    EXIT_TICK_DUE,     /* the sampling timer's period: take a sample */
    EXIT_TICK_RECHECK, /* between ticks: only look for threads back in user mode */
};
enum exit_tick exit_tick(struct exit_vcpu *sv, uint64_t now);
/* Identity, continuation completion, walks and records for `snap` at time `now` (a sample
 * only if `due`). May complete snap (kernel_cr3). Returns the time the user-side work ended. */
uint64_t exit_take(struct exit_vcpu *sv, struct gw_snapshot *snap, uint64_t now, bool due);
/* sample.c: the walk word's stop code of a walk (schema/schema.h). */
unsigned exit_stop_code(const struct gw_stack *st);
/* emit.c: the record into the vCPU's ring (a full ring counts a drop; fxt/ring.h). */
void exit_emit(struct exit_vcpu *sv, const struct hvfxt_sample *smp);
