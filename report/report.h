/* Report formats, one writer per file (report_<format>.c). Each takes a symbolized profile
 * (profile_symbolize) and writes to a stdio stream. */
#pragma once

#include <stdio.h>

#include "common/err.h"
#include "report/profile.h"
#include "report/report_sort.h"

enum report_format {
    REPORT_TOP,         /* perf-report-like table: self/total per function, per process, per vCPU */
    REPORT_FOLDED,      /* "frame;frame;leaf count" lines (FlameGraph, inferno, speedscope) */
    REPORT_PPROF,       /* gzip-compressed profile.proto */
    REPORT_PERF_SCRIPT, /* `perf script` text (Firefox Profiler, speedscope, Perfetto) */
    REPORT_SVG,         /* self-contained interactive flame graph */
    REPORT_TIMELINE,    /* FXT with per-vCPU nested slices (Perfetto timeline) */
    REPORT_TREE,        /* callers and callees of the hottest functions (perf report -g, gprof) */
    REPORT_JSON,        /* the top table with callers and callees, for programs */
    REPORT_NFORMATS
};

/* "top" -> REPORT_TOP ...; -1 if unknown. */
int report_format_parse(const char *name);
const char *report_format_name(enum report_format f);
/* Every format's name in the table's order, ", " between them ("top, tree, json, ..."). */
const char *report_format_list(void);
/* File name used for the format in `--format all -o DIR` ("top.txt", "profile.pb.gz", ...). */
const char *report_format_filename(enum report_format f);
/* perf-script and the timeline write each sample with its own time: the profile must keep
 * them all (profile.aggregate off). */
bool report_format_needs_each_sample(enum report_format f);
/* pprof and timeline are binary: written to a file, never to a terminal. */
bool report_format_is_binary(enum report_format f);

struct report_opts {
    const char *title;      /* SVG title / pprof comment; NULL = "hvprof" */
    const char *event_name; /* perf-script event name; NULL = "cpu-clock" */
    unsigned top_limit;     /* rows in the top table; 0 = 50 */
    /* The top table as perf's: --sort keys, --no-children, --percent-limit (report_sort.h). */
    struct report_sort sort;
    bool no_children;
    double percent_limit;
    bool header; /* the top table opens with what the recording says of itself */
    /* Folded stacks and the flame graph: the frames nearest the root kept, at most max_depth
     * (0: all); recursion folded (a function calling itself, directly or through frames of its
     * own, one frame). */
    unsigned max_depth;
    bool fold_recursion;
    /* The tree: each function's source file and line and where its module's names came from
     * (report -v). */
    bool verbose;
    /* perf-script: each frame's source line under it (perf script -F +srcline), the sample's
     * cgroup path on its first line (-F +cgroup). */
    bool srcline, cgroup;
    /* pprof: name functions as if this profile's were in the file too (hvprof diff writes both
     * recordings so, for `pprof -diff_base`); NULL: this profile alone. */
    const struct profile *names_with;
};

int report_write(enum report_format f, const struct profile *p, const struct report_opts *o,
                 FILE *out, struct hv_err *err);

/* What the recording says of itself (report_header.c), `report --header`. */
int report_write_header(const struct profile *p, FILE *out, struct hv_err *err);
/* The recording's length in seconds: session_start to session_stop, or to its last sample. */
double report_duration_s(const struct profile *p);

int report_write_top(const struct profile *p, const struct report_opts *o, FILE *out,
                     struct hv_err *err);
/* An exit profile's table by exit site (profile.exits; report_exits.c): the top format prints
 * it before the functions. */
int report_write_exit_table(const struct profile *p, FILE *out, struct hv_err *err);
int report_write_folded(const struct profile *p, const struct report_opts *o, FILE *out,
                        struct hv_err *err);
int report_write_pprof(const struct profile *p, const struct report_opts *o, FILE *out,
                       struct hv_err *err);
int report_write_perf_script(const struct profile *p, const struct report_opts *o, FILE *out,
                             struct hv_err *err);
int report_write_svg(const struct profile *p, const struct report_opts *o, FILE *out,
                     struct hv_err *err);
int report_write_timeline(const struct profile *p, const struct report_opts *o, FILE *out,
                          struct hv_err *err);
int report_write_tree(const struct profile *p, const struct report_opts *o, FILE *out,
                      struct hv_err *err);
int report_write_json(const struct profile *p, const struct report_opts *o, FILE *out,
                      struct hv_err *err);

/* Helpers shared by the writers (report_common.c). */
/* Samples per guest process row (profile_process_row) or per vCPU: weight and kernel weight,
 * heaviest first. -1 when out of memory. */
struct report_group {
    uint64_t key, weight, kernel;
};
int report_group_by(const struct profile *p, bool by_vcpu, struct report_group **out, size_t *nout);
/* Per profile function (p->funcs.n of them, malloc'd): samples with it at the leaf (self) and
 * anywhere on the stack (total; a sample once, however often recursion puts it there), and
 * whether its frames are guest-kernel ones. NULL when out of memory. */
struct report_func_weight {
    uint64_t self, total;
    bool kernel;
};
struct report_func_weight *report_func_weights(const struct profile *p);
/* A function's shared object as the tables print it: its module's base name, or "[unknown]". */
const char *report_func_dso(const struct profile *p, uint32_t func);
/* Frame display name with the characters a format cannot carry replaced (';' and newlines for
 * folded, control characters everywhere). Returns `buf`. */
const char *report_frame_name(const struct profile *p, const struct prof_frame *fr, char *buf,
                              size_t len);
