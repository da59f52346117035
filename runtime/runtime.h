/* A language runtime's frames from outside the guest (docs/runtimes.md): one interface in three
 * halves, on the model of the OpenTelemetry eBPF profiler's interpreter plugins (its loader,
 * per-process data, per-sample unwinder and symbolizer):
 *
 *   exit half    at each sample, on the vCPU thread: the runtime's frame chain of the sampled
 *                thread, as addresses only (code objects and positions in them), read through
 *                the vCPU's walker; bounded, no allocation, no lock, no I/O (the exit core's
 *                rules, checked on its library by cmake/check_exit_core.cmake);
 *   record half  on the drain thread: finds the runtime in a process after each look at its
 *                address space and publishes what the exit half reads (immutable, kept until
 *                the recording closes); names the code objects samples show, as runtime code
 *                records in the file, within the metadata budget;
 *   report half  at report time: the code records, and each sample's runtime frames merged into
 *                its native stack as a step of its own after native symbolization, each frame
 *                named by its function, file and line.
 *
 * The recording carries them generically (docs/fxt-samples.md, "Runtime frames"): a sample's
 * runtime_stack field (the runtime's id, then two words a frame) and runtime code records.
 *
 * A runtime is one folder (python/: its own reading code, exit/, record/ and report/) and one
 * row of HV_RUNTIMES below, from which the recorder's and the report's tables are made
 * (sampler/sources/runtimes/, report/runtimes.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "schema/schema.h"

/* Every runtime hvprof reads: X(name, id). Each name has runtime_<name>_exit, _record and
 * _report (the three halves' ops tables, below). */
#define HV_RUNTIMES(X) X(python, HVFXT_RUNTIME_PYTHON)

struct discover_module;
struct guestos_as;
struct gw_walker;
struct hvfxt_code_view;
struct prof_loc;
struct profile;
struct rec_env;
struct sampler_config;

/* Frames the exit half writes at most a sample (two words each). */
#define RUNTIME_MAX_FRAMES 128

/* ---- the exit half ---------------------------------------------------------------------- */
struct runtime_exit_ops {
    uint8_t id; /* HVFXT_RUNTIME_* */
    const char *name;
    /* The frames of guest thread `tid` (the guest's own id) in the process `data` describes
     * (what the record half published for it), read through `w`, begun on the sample's
     * snapshot, into out[0..max): per frame a code word (its address in HVFXT_RT_CODE_MASK,
     * HVFXT_RT_ENTRY where the frames of one native frame end, HVFXT_RT_CUT on the outermost
     * when more were left out) and a position in that code. Returns the words written (0: no
     * frames, or nothing readable). */
    uint32_t (*frames)(const void *data, struct gw_walker *w, int64_t tid, uint64_t *out,
                       uint32_t max);
};

/* ---- the record half -------------------------------------------------------------------- */
/* How the record half hands the exit half its data for process `proc` (1..ID_MAX_PROCS):
 * immutable from then on, owned by the record half until its destroy. */
struct runtime_publisher {
    void (*publish)(void *ctx, uint32_t proc, const struct runtime_exit_ops *exit,
                    const void *data);
    void *ctx;
};

struct runtime_record_ops {
    uint8_t id;
    const char *name;
    /* Whether this recording reads it (NULL: always; `record --no-python`). */
    bool (*wanted)(const struct sampler_config *cfg);
    int (*create)(const struct rec_env *env, void **st, struct hv_err *err);
    /* A look at process `proc`'s address space found these modules (already recorded): the
     * runtime, if it is there and can be read, is published. */
    void (*address_space)(void *st, const struct rec_env *env, uint32_t proc,
                          const struct guestos_as *as, const struct discover_module *found,
                          size_t n, const struct runtime_publisher *pub);
    /* A drain pass (its slice: rec_may_work): processes whose runtime could not be read yet. */
    void (*poll)(void *st, const struct rec_env *env, uint64_t now,
                 const struct runtime_publisher *pub);
    /* A sample about to be written shows code object `code` of process `proc` (koid `pid`):
     * its runtime code record, if it has none yet (or its address now holds another). -1 only
     * when the file cannot be written. */
    int (*name_code)(void *st, const struct rec_env *env, uint32_t proc, uint64_t pid,
                     uint64_t code, uint64_t now, struct hv_err *err);
    /* Process `proc` ended (the source's process_ended): what the runtime kept for it goes,
     * what its exit half may still read through rec_retire. Its runtime is unpublished. */
    void (*process_ended)(void *st, const struct rec_env *env, uint32_t proc);
    /* Its lines of the summary ("  python: ..."), from its own counts and the exit core's. */
    void (*summary)(const void *st, const struct rec_env *env, FILE *out);
    void (*destroy)(void *st);
};

/* ---- the report half -------------------------------------------------------------------- */
struct runtime_report_ops {
    uint8_t id;
    const char *name;
    /* A runtime code record of the recording, in file order. */
    int (*add_code)(struct profile *p, const struct hvfxt_code_view *c, struct hv_err *err);
    /* What a sample's frame of code object `code` in process `pid` is bound to when it is
     * loaded: the latest code record of it so far (its index), or -1. */
    int64_t (*code_latest)(const struct profile *p, uint64_t pid, uint64_t code);
    /* After native symbolization: every sample's recorded frames of this runtime merged into
     * its native stack (frames of the runtime, unresolved, for resolve). */
    int (*merge)(struct profile *p, struct hv_err *err);
    /* A frame of this runtime to its location: function, module, line. */
    int (*resolve)(struct profile *p, struct prof_loc *l, struct hv_err *err);
    /* A location's address as a report shows it (the code object's). */
    uint64_t (*loc_address)(const struct profile *p, const struct prof_loc *l);
};
/* What the report half keeps goes in the profile's runtime[id] (its data and its free). */

#define RUNTIME_DECLARE_(name, id)                                                                 \
    extern const struct runtime_exit_ops runtime_##name##_exit;                                    \
    extern const struct runtime_record_ops runtime_##name##_record;                                \
    extern const struct runtime_report_ops runtime_##name##_report;
HV_RUNTIMES(RUNTIME_DECLARE_)
#undef RUNTIME_DECLARE_
