/* The recorder core's own state (sampler.c, drain.c, names.c, boot_modules.c, flight.c,
 * vcpu_hooks.c, timer.c): the rings, the names, the file, the summary's frame, the life cycle.
 * The sources (sampler/sources/) never see it: they get a struct rec_env and the core's
 * queries (sampler/source/source.h). What runs at each exit is the exit core
 * (sampler/exit/core.h); the recorder sets it up, drains its rings and reads its counters. */
#pragma once

#ifndef HVPROF_RECORDER_CORE
#error                                                                                             \
    "sampler/sampler_priv.h is the recorder core's own: a source reaches the core through sampler/source/source.h"
#endif

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <time.h>

#include "common/vector.h"
#include "common/output.h"
#include "fxt/ring.h"
#include "fxt/writer.h"
#include "guestos/guestos.h"
#include "guestwalk/snapshot.h"
#include "guestwalk/unwind.h"
#include "guestwalk/walker.h"
#include "sampler/exit/core.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/parts/module_files.h"
#include "sampler/parts/module_registry.h"
#include "sampler/source/config.h"
#include "sampler/source/source.h"
#include "schema/encode.h"
#include "schema/recording.h"

/* A bzImage's decompressor (sampler_modules_decompressor): its module and its one symbol. */
#define SAMPLER_DECOMPRESSOR_MODULE_NAME "[decompressor]"
#define SAMPLER_DECOMPRESSOR_SYMBOL      "bzImage_decompressor" /* no spaces in a symbol */
/* A vCPU the guest has not started yet (sampler_modules_reset_vector): its module and symbol. */
#define SAMPLER_RESET_MODULE_NAME "[reset vector]"
#define SAMPLER_RESET_SYMBOL      "vcpu_not_started"

/* The recording's life cycle (sampler.h's calls), one state at a time:
 *   CREATED   sampler_create: the rings, the sources, the file as NAME.part
 *   ATTACHED  sampler_attach: the guest's memory known, session_start written, the sources'
 *             begin records, the file under its name
 *   RUNNING   sampler_start: the drain thread moves the rings (the vCPU threads run)
 *   FINISHED  sampler_finish: the drain thread stopped, the last pass, the stop marker, the
 *             file closed
 * A failure in CREATED leaves nothing but what sampler_destroy removes (NAME.part); from
 * ATTACHED on, the file keeps what was written (a valid prefix). sampler_destroy from any. */
enum sampler_state {
    SAMPLER_CREATED,
    SAMPLER_ATTACHED,
    SAMPLER_RUNNING,
    SAMPLER_FINISHED,
};

struct boot_kernel_image;
struct sampler_flight;
struct vm;

/* The most sources one recording runs (the table's length, sampler/sources.c). */
#define SAMPLER_MAX_SOURCES 16

/* One source as this recording runs it. */
struct sampler_source {
    const struct rec_source_ops *ops;
    void *st;
};

struct sampler {
    struct sampler_config cfg;
    enum sampler_state state;
    struct vm *vm;
    const struct gmem *mem; /* the guest's memory (the VM's, or a test's) */
    struct guestos os;      /* what the guest's OS tells (guestos/guestos.h) */
    struct exit_core core;  /* what the vCPU threads read at each exit (sampler/exit/core.h) */
    struct fxt_writer w;
    struct hv_output out; /* the recording's file and directory (common/output.h) */
    bool writer_open;
    uint64_t period_ns;
    uint64_t start_ns;

    /* the sources (sampler/sources.c), in the table's order, and what they are given */
    struct sampler_source src[SAMPLER_MAX_SOURCES];
    size_t nsrc;
    struct rec_env env;

    /* drain thread */
    pthread_t drain;
    bool drain_started;
    _Atomic bool drain_stop;
    /* The guest-driven work of one stage of a drain pass (first looks at new address spaces,
     * re-looks, kernel modules) ends at this time; the final pass has its own, longer slice
     * (drain.c, docs/reliability.md "Budgets"). */
    uint64_t stage_deadline_ns;
    bool final_pass;
    _Atomic bool write_failed;
    struct hv_err write_err;
    uint32_t named_procs_scan, named_threads_scan; /* drain-side progress over the id tables */
    uint8_t *proc_named; /* per proc slot: 0 new, 1 named, 2 its first look done */
    uint8_t *thread_named;
    uint32_t *proc_seq, *thread_seq; /* label sequence each was last named at (id_label.h) */
    bool unattributed_named;         /* the full tables' identity's records written */
    uint64_t *looked; /* per proc slot: when the last look at its address space began */
    struct discover_registry modules; /* modules and mappings recorded (module_registry.h) */
    struct module_file_stats files;   /* modules' files read (module_files.h) */
    struct rec_kernel kernel;         /* the kernel source's description (source.h) */
    struct meta_budget meta;          /* metadata records' budget (drain thread) */
    uint64_t drained_records;
    uint64_t lost;          /* records not written after a write failure (writer + rings) */
    _Atomic uint64_t lstar; /* guest MSR_LSTAR at the end (vCPU 0), for Linux KASLR */
    uint64_t last_progress_ns;
    bool host_virtualized;           /* hvprof itself runs in a VM: timings are emulated */
    bool flight_on;                  /* cfg.ring_bytes: samples go to the flight recorder */
    struct sampler_flight *flight;   /* flight.h; the drain thread's, but for its request counter */
    struct sampler_reclaim *reclaim; /* identities given back (reclaim.c) */
    const char *guest_stop;          /* sampler_guest_stopped's `why`, or NULL */
};

/* The recording whose exit core `core` is. */
static inline struct sampler *sampler_of(struct exit_core *core)
{
    return (struct sampler *)((char *)core - offsetof(struct sampler, core));
}

/* sampler.c: the walker of one vCPU (sampler_vcpu_start; tests call it directly) */
int sampler_vcpu_prepare(struct exit_vcpu *sv, struct hv_err *err);

/* timer.c */
int sampler_timers_create(struct exit_vcpu *sv, pid_t tid, struct hv_err *err);
void sampler_timers_delete(struct exit_vcpu *sv);

/* sampler.c: the session_stop marker into `w` (the file, or a flight recorder's snapshot,
 * `snapshot` saying why it was written; NULL for a recording without --ring). */
int sampler_write_stop_marker(struct sampler *s, struct fxt_writer *w, const char *snapshot,
                              struct hv_err *err);

/* sources.c: the sources this recording wants, created in the table's order, and their end. */
int sampler_sources_create(struct sampler *s, struct hv_err *err);
int sampler_sources_begin(struct sampler *s, struct hv_err *err);
void sampler_sources_summary(const struct sampler *s, FILE *out);
void sampler_sources_destroy(struct sampler *s);
/* Every source's poll of `stage`, each with its own time slice; -1 with err naming the source
 * that failed. */
int sampler_sources_poll(struct sampler *s, enum rec_stage stage, uint64_t now, bool final,
                         struct hv_err *err);
/* fxt_record_visit_fn, ctx the sampler: every source's visit of a record about to be
 * written. */
int sampler_sources_visit(void *ctx, const uint64_t *rec, uint32_t nwords, struct hv_err *err);

/* drain.c */
/* Whether the current stage of the drain pass may start another unit of guest-driven work:
 * its time slice is not spent, and the recording is not stopping (the final pass excepted). */
bool sampler_drain_may_work(const struct sampler *s);
/* A new time slice for the stage that begins (DRAIN_STAGE_NS, the final pass's longer). */
void sampler_stage_begin(struct sampler *s);
int sampler_drain_start(struct sampler *s, struct hv_err *err);
void sampler_drain_stop(struct sampler *s);
int sampler_drain_once(struct sampler *s, bool final);

/* names.c: new identities' kernel object records, and the first look at each new user
 * address space (every source's process_named); -1 with err when one fails. */
int sampler_name_identities(struct sampler *s, struct hv_err *err);

/* boot_modules.c: what the VMM loaded, recorded at sampler_attach in guest address space 0
 * (-1 only when the file cannot be written):
 * - a guest kernel ELF (`name`, its image): module + mappings at its link addresses;
 * - a bzImage's decompressor, [start, end) (load address + init_size), as the module
 *   "[decompressor]" with one symbol spanning it, so that the boot's samples in it are named;
 * - wall mode with a kernel the VMM loaded itself: an application processor waits for the
 *   guest's startup IPI in the reset state, its RIP at the reset vector 0xfff0 in real mode
 *   (SDM Vol. 3A 9.1.4), and every tick samples it there: the page [0xf000, 0x10000) as the
 *   module "[reset vector]", the symbol "vcpu_not_started" at 0xfff0 (no code of a directly
 *   loaded kernel runs there: an AP's startup IPI starts it at its own vector page). */
int sampler_modules_kernel_image(struct sampler *s, const char *name,
                                 const struct boot_kernel_image *img, struct hv_err *err);
int sampler_modules_decompressor(struct sampler *s, uint64_t start, uint64_t end,
                                 struct hv_err *err);
int sampler_modules_reset_vector(struct sampler *s, struct hv_err *err);

/* reclaim.c: identities that follow the guest's lifecycle, on the drain thread
 * (docs/identities.md): which of the exit core's identities ended, each ended one's record in
 * the trace and every source's word that it is gone, and the slots given back once the exit
 * core's grace is over. */
struct sampler_reclaim;

/* Its state for a recording of `nvcpus` vCPUs; NULL when out of memory. */
struct sampler_reclaim *sampler_reclaim_create(unsigned nvcpus);
/* Frees what is still retired (the recording's vCPUs have stopped). */
void sampler_reclaim_destroy(struct sampler_reclaim *r);

/* One drain pass's part: gives back what ended a pass ago if the grace is over, and every
 * RECLAIM_SWEEP_NS ends the identities the guest no longer has. -1 only when the file cannot
 * be written (err). */
int sampler_reclaim_pass(struct sampler *s, uint64_t now, struct hv_err *err);

/* rec_retire's core: free_fn(ptr) after the grace (at once when out of memory for the list,
 * after waiting for the grace). */
void sampler_reclaim_retire(struct sampler *s, void *ptr, void (*free_fn)(void *));

/* The summary's words on it: "N processes and M threads ended (...)"; nothing before any. */
void sampler_reclaim_summary(const struct sampler_reclaim *r, FILE *out);
