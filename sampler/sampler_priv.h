/* Internals shared by the sampler's files (exit path, timers, drain thread, modules, summary). */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "fxt/ring.h"
#include "fxt/writer.h"
#include "schema/recording.h"
#include "guestwalk/pti.h"
#include "guestwalk/unwind.h"
#include "guestwalk/walker.h"
#include "sampler/identity.h"
#include "sampler/sampler.h"

#define SAMPLER_MAX_PENDING 8 /* open continuations per vCPU (distinct guest threads) */
#define SAMPLER_MAX_FRAMES  1000

/* An RFC-0274 continuation: kernel-mode samples of one guest thread waiting for its return to
 * user mode, when the user stack is walked and one completion record closes them all. */
struct pending {
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
    uint64_t rechecks;  /* exits taken only to look for a return to user mode */
    uint64_t exits;     /* every timer exit seen */
    uint64_t records;   /* records committed to the ring */
    uint64_t walk_fail; /* stacks that ended on a fault or invalid frame */
    /* time spent in the exit hook, and its parts (ns) */
    uint64_t t_total, t_max, t_regs, t_walk, t_push;
    uint64_t t_samples; /* exits the totals above cover */
    uint64_t cpu_ns;    /* the vCPU thread's CPU time (guest time included), at its stop */
};

struct sampler_vcpu {
    struct sampler *s;
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
    struct pti_cache pti;   /* Linux PTI pairs seen by this vCPU (guestwalk/pti.h) */
    struct pending pend[SAMPLER_MAX_PENDING];
    unsigned npend;
    struct vcpu_stats st;
    uint64_t frames_k[SAMPLER_MAX_FRAMES];
    uint64_t frames_u[SAMPLER_MAX_FRAMES];
    _Atomic bool stopped;
};

struct sampler {
    struct sampler_config cfg;
    struct vm *vm;
    struct fxt_writer w;
    bool writer_open;
    uint64_t period_ns;
    uint64_t start_ns;
    struct id_table *ids;
    struct sampler_vcpu *v;

    /* drain thread */
    pthread_t drain;
    bool drain_started;
    _Atomic bool drain_stop;
    _Atomic bool write_failed;
    struct hv_err write_err;
    uint32_t named_procs_scan, named_threads_scan; /* drain-side progress over the id tables */
    uint8_t *proc_named; /* per proc slot: 0 new, 1 named, 2 modules discovered */
    uint8_t *thread_named;
    struct sampler_modules *mods;
    uint64_t drained_records;
    uint64_t lost;          /* records not written after a write failure (writer + rings) */
    _Atomic uint64_t lstar; /* guest MSR_LSTAR at the end (vCPU 0), for Linux KASLR */
    uint64_t last_progress_ns;
    bool host_virtualized; /* hvprof itself runs in a VM: timings are emulated */
};

static inline uint64_t sampler_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* exit.c */
int sampler_vcpu_start(void *ctx, struct vcpu *v, struct hv_err *err);
void sampler_vcpu_interrupted(void *ctx, struct vcpu *v, uint64_t ticks);
void sampler_vcpu_stop(void *ctx, struct vcpu *v);

/* timer.c */
int sampler_timers_create(struct sampler_vcpu *sv, pid_t tid, struct hv_err *err);
void sampler_recheck_arm(struct sampler_vcpu *sv, bool on);
void sampler_timers_delete(struct sampler_vcpu *sv);

/* drain.c */
int sampler_drain_start(struct sampler *s, struct hv_err *err);
void sampler_drain_stop(struct sampler *s);
int sampler_drain_once(struct sampler *s, bool final);

/* modules.c: module discovery of guest address spaces, on the drain thread */
struct sampler_modules *sampler_modules_create(void);
void sampler_modules_destroy(struct sampler_modules *m);
int sampler_modules_discover(struct sampler *s, uint32_t proc, const struct id_proc_info *info,
                             struct hv_err *err);
/* A guest kernel ELF the VMM loaded: module + mapping into guest address space 0. */
int sampler_modules_kernel_elf(struct sampler *s, const char *path, struct hv_err *err);
