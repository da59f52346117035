/* The recorder's sources: every feature of `hvprof record`'s drain thread apart from the core
 * (the rings, the names, the file, the summary's frame, the life cycle: sampler/sampler.c,
 * drain.c). A source is one folder under sampler/sources/ with its own state, reached only
 * through its ops table; the core calls the sources in the order of one table
 * (sampler/sources.c) at the points below, and gives them this environment: what the
 * recording is (its configuration, the guest's memory and OS layer, the exit core's tables,
 * the file's writer and its metadata budget) and a few named core queries (`rec_*` below).
 * A source never reaches another source or the core's private state (the build checks it:
 * cmake/check_sources.cmake). docs/architecture.md draws it.
 *
 * One drain pass, in order (drain.c):
 *   REC_STAGE_VISIT    sources that visit the guest's threads (may meet threads no exit
 *                      showed yet: their records wait for the names)
 *   (core)             new processes and threads named; each new user address space gets
 *                      every source's process_named (the first look at its modules)
 *   REC_STAGE_NAMED    records that refer to named identities (queued off-CPU records)
 *   REC_STAGE_GUEST    guest-driven looks (the kernel, its modules, address spaces, runtimes),
 *                      each source with its own time slice (rec_may_work)
 *   (core)             every vCPU ring into the file, each record shown to every visit
 *   REC_STAGE_DRAINED  what the drained samples need (copied stacks, steal markers, the
 *                      kernel's panic) after them
 *   (core)             the file flushed, the flight recorder's snapshots, the progress line
 * A source's error stops the recording like a write error, and names the source. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "sampler/source/config.h"

struct discover_module;
struct discover_registry;
struct exit_core;
struct fxt_writer;
struct gmem;
struct guestos;
struct guestos_as;
struct id_proc;
struct meta_budget;
struct module_file_stats;
struct vm;

enum rec_stage {
    REC_STAGE_VISIT,
    REC_STAGE_NAMED,
    REC_STAGE_GUEST,
    REC_STAGE_DRAINED,
    REC_STAGE_COUNT,
};
#define REC_STAGE_BIT(st) (1u << (st))

/* The guest kernel's description of itself, as far as it is known: written by the kernel
 * source only (sampler/sources/kernel/), read by the others (the kernel's modules, off-CPU). */
enum rec_kernel_state {
    REC_KERNEL_SEARCHING,
    REC_KERNEL_FOUND,
    REC_KERNEL_FAILED,
};
#define REC_KERNEL_MODULE_NAME "[kernel.kallsyms]" /* perf's name for the kernel */
struct rec_kernel {
    enum rec_kernel_state state;
    uint64_t attempts, last_try_ns, interval_ns, found_ns, scan_ns;
    char message[HV_ERR_MSG_MAX + 256];
    bool tasks_known; /* the OS layer reads each stop's guest task from now on */
    char tasks[192];  /* how, or why not */
    bool stacks_orc;  /* kernel stacks unwound with the kernel's ORC tables */
    char stacks[192]; /* what was loaded, or why not */
    bool files_known;
    char files[192]; /* how a page's file and the page cache are read, or why not */
    size_t symbols;  /* code symbols recorded (as many as the metadata budget held) */
    bool panic_seen; /* the guest kernel's own record of a panic (guestos_panicked) */
    int panic_cpu;
    uint64_t panic_ns;
};

/* The recording's sample counts (sampler_get_totals; rec_totals for a source's summary). */
struct sampler_totals {
    uint64_t user, kernel, idle, missed, completed, abandoned, dropped, rechecks, exits;
    uint64_t records; /* sample records written by the vCPU threads (ring commits) */
    /* Kernel samples whose walk reached the user entry frame, and of those whose user stack
     * was walked from there at once (docs/orc.md). */
    uint64_t user_entry, user_at_entry;
    double mean_exit_ns; /* mean VMM time per sample exit */
};

struct rec_core; /* the recorder core, opaque to sources */

/* The core's queries, as an ops table the core fills (sources link nothing of the core). */
struct rec_core_ops {
    /* Whether the current stage of the pass may start another unit of guest-driven work: its
     * time slice is not spent, and the recording is not stopping (the final pass excepted). */
    bool (*may_work)(const struct rec_core *c);
    /* A look at process `proc`'s address space found `found[0..n)` (its modules, already
     * recorded): every source's address_space hook sees it (unwind tables, runtimes), and the
     * core notes when the look began (rec_looked). */
    void (*address_space)(struct rec_core *c, uint32_t proc, const struct guestos_as *as,
                          const struct discover_module *found, size_t n, uint64_t began);
    /* When the last look at process `proc`'s address space began (hv_now_ns), 0 before its
     * first: what the sources published for it is in place by then. */
    uint64_t (*looked)(const struct rec_core *c, uint32_t proc);
    /* The flight recorder's snapshot now (`why`: "panic"); nothing without --ring. */
    void (*snapshot)(struct rec_core *c, const char *why);
    /* The recording's sample counts so far. */
    void (*totals)(const struct rec_core *c, struct sampler_totals *t);
    /* free_fn(ptr) once no exit that may use what ptr points to is running (the exit core's
     * grace, sampler/exit/grace.h): for what a source published to the exit path and has
     * since unpublished. At the recording's end at the latest. */
    void (*retire)(struct rec_core *c, void *ptr, void (*free_fn)(void *));
};

/* What every source is given. Pointers the core owns; `mem` and `vm` are NULL before the
 * guest's memory is known (sampler_attach) and in tests without a guest. */
struct rec_env {
    const struct sampler_config *cfg;
    const struct gmem *mem;
    struct vm *vm;
    struct guestos *os;
    struct exit_core *core;            /* the exit path's tables and per-vCPU counters */
    struct fxt_writer *w;              /* the file: the drain thread's only */
    struct meta_budget *meta;          /* metadata records' budget */
    struct discover_registry *modules; /* modules and mappings recorded (module_registry.h) */
    struct module_file_stats *files;   /* modules' files read (module_files.h) */
    struct rec_kernel *kernel;         /* the guest kernel's description (above) */
    uint64_t start_ns;                 /* the recording's start (hv_now_ns) */
    bool flight_on;                    /* samples go to the flight recorder (--ring) */
    const struct rec_core_ops *ops;
    struct rec_core *c;
};

static inline bool rec_may_work(const struct rec_env *env)
{
    return env->ops->may_work(env->c);
}
static inline uint64_t rec_looked(const struct rec_env *env, uint32_t proc)
{
    return env->ops->looked(env->c, proc);
}
static inline void rec_address_space(const struct rec_env *env, uint32_t proc,
                                     const struct guestos_as *as,
                                     const struct discover_module *found, size_t n, uint64_t began)
{
    env->ops->address_space(env->c, proc, as, found, n, began);
}
static inline void rec_snapshot(const struct rec_env *env, const char *why)
{
    env->ops->snapshot(env->c, why);
}
static inline void rec_totals(const struct rec_env *env, struct sampler_totals *t)
{
    env->ops->totals(env->c, t);
}
static inline void rec_retire(const struct rec_env *env, void *ptr, void (*free_fn)(void *))
{
    env->ops->retire(env->c, ptr, free_fn);
}

/* One source. Every hook may be NULL (a source without create has no state: `st` is NULL);
 * `st` is what create made. */
struct rec_source_ops {
    const char *name; /* as errors and the summary name it: "kernel", "off-cpu" */
    /* Whether this recording needs it (NULL: always). */
    bool (*wanted)(const struct sampler_config *cfg);
    /* At sampler_create, before the guest runs: its state, and what it hands the exit core
     * (published tables). -1 with err on failure (out of memory: HV_ERR_NO_MEMORY). */
    int (*create)(const struct rec_env *env, void **st, struct hv_err *err);
    /* At sampler_attach, the guest's memory known and the file open: records made once. */
    int (*begin)(void *st, const struct rec_env *env, struct hv_err *err);
    unsigned stages; /* REC_STAGE_BIT()s of the stages poll runs in */
    /* One drain pass's work in `stage`; `final`: the last pass, after the guest stopped.
     * -1 stops the recording (the file cannot be written, memory ran out). */
    int (*poll)(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now, bool final,
                struct hv_err *err);
    /* A user address space named for the first time: 1 when done with it, 0 when the pass's
     * slice is spent (asked again next pass), -1 on error. */
    int (*process_named)(void *st, const struct rec_env *env, uint32_t proc,
                         const struct id_proc *p, struct hv_err *err);
    /* rec_address_space's fan-out: a look at `proc`'s address space found these modules. */
    void (*address_space)(void *st, const struct rec_env *env, uint32_t proc,
                          const struct guestos_as *as, const struct discover_module *found,
                          size_t n);
    /* Process `proc` ended (the guest's task list no longer has it, or it aged out: docs/
     * identities.md): whatever the source keeps for it goes (what it published to the exit path
     * through rec_retire). Its slot is given back to a later process after the exit core's
     * grace, and `proc` may then name another. Its threads ended before it (thread_ended). */
    void (*process_ended)(void *st, const struct rec_env *env, uint32_t proc);
    /* Thread `thread` (of process `proc`) ended, as process_ended. */
    void (*thread_ended)(void *st, const struct rec_env *env, uint32_t proc, uint32_t thread);
    /* Every ring record, about to be written (the file or the flight recorder): names what
     * it refers to first. -1 on error. */
    int (*visit)(void *st, const struct rec_env *env, const uint64_t *rec, uint32_t nwords,
                 struct hv_err *err);
    /* Its lines of the summary, each "  what: ...\n"; nothing when it has nothing to say. */
    void (*summary)(const void *st, const struct rec_env *env, FILE *out);
    void (*destroy)(void *st);
};

/* The sources in the order the core calls them (sampler/sources.c). */
extern const struct rec_source_ops *const rec_sources[];
extern const size_t rec_nsources;
