/* Two recordings compared (`hvprof diff BASE NEW`, docs/report.md "Comparing two recordings"):
 * their stacks joined by text, their functions joined by (shared object, name, kernel or user),
 * written as a table of shares and changes, differential folded stacks (FlameGraph's
 * difffolded.pl convention: "stack count_base count_new") or a red/blue flame graph. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "common/vector.h"
#include "report/profile.h"

struct diff_stack {
    char *text; /* "proc;root;...;leaf", as `report --format folded` writes it */
    uint64_t base, new;
};

struct diff_func {
    char *name; /* the symbol */
    char *dso;  /* its shared object's base name, "[unknown]" without one */
    bool kernel;
    uint64_t base_self, base_total, new_self, new_total;
};

struct report_diff {
    struct diff_stack *stacks; /* in report_stacks_cmp_text order */
    size_t nstacks;
    VECTOR(struct diff_func) funcs;
    uint64_t base_total, new_total;   /* samples (weights) of each profile */
    const struct profile *base, *new; /* the profiles compared (the tree reads their calls) */
};

/* Both profiles symbolized (profile_symbolize). */
int report_diff_build(const struct profile *base, const struct profile *new, struct report_diff *d,
                      struct hv_err *err);
void report_diff_free(struct report_diff *d);

/* What a differential flame graph's widths show (hvprof diff --widths). */
enum report_diff_widths {
    REPORT_DIFF_WIDTHS_UNION, /* the larger of NEW's and BASE's (scaled) samples: nothing hidden */
    REPORT_DIFF_WIDTHS_NEW,   /* NEW's, as flamegraph.pl draws difffolded output */
    REPORT_DIFF_WIDTHS_BASE,  /* BASE's, as flamegraph.pl --negate with the columns swapped */
};

struct report_diff_opts {
    const char *base_name, *new_name; /* the recordings, for the table's header and the title */
    bool raw;                         /* counts as recorded: the base not scaled to the new total */
    unsigned limit;                   /* table rows; 0 = 50 */
    const char *title;                /* the flame graph's; NULL = "hvprof diff: BASE -> NEW" */
    enum report_diff_widths widths;
};

/* The base's count scaled to the new profile's total (unless raw). */
double report_diff_scaled_base(const struct report_diff *d, const struct report_diff_opts *o,
                               uint64_t base);

/* The functions by the size of their change (self share, then children share), largest
 * first: malloc'd, NULL without memory. */
const struct diff_func **report_diff_ranked(const struct report_diff *d);

int report_diff_write_top(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                          struct hv_err *err);
int report_diff_write_folded(const struct report_diff *d, const struct report_diff_opts *o,
                             FILE *out, struct hv_err *err);
/* The functions as JSON, and each stack's counts (report_diff_json.c; docs/json.md). */
int report_diff_write_json(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                           struct hv_err *err);
/* The most changed functions with their callers and callees in both (report_diff_tree.c). */
int report_diff_write_tree(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                           struct hv_err *err);
int report_diff_write_svg(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                          struct hv_err *err);
