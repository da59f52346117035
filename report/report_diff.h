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
    uint64_t base_total, new_total; /* samples (weights) of each profile */
};

/* Both profiles symbolized (profile_symbolize). */
int report_diff_build(const struct profile *base, const struct profile *new, struct report_diff *d,
                      struct hv_err *err);
void report_diff_free(struct report_diff *d);

struct report_diff_opts {
    const char *base_name, *new_name; /* the recordings, for the table's header and the title */
    bool raw;                         /* counts as recorded: the base not scaled to the new total */
    unsigned limit;                   /* table rows; 0 = 50 */
    const char *title;                /* the flame graph's; NULL = "hvprof diff: BASE -> NEW" */
};

/* The base's count scaled to the new profile's total (unless raw). */
double report_diff_scaled_base(const struct report_diff *d, const struct report_diff_opts *o,
                               uint64_t base);

int report_diff_write_top(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                          struct hv_err *err);
int report_diff_write_folded(const struct report_diff *d, const struct report_diff_opts *o,
                             FILE *out, struct hv_err *err);
int report_diff_write_svg(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                          struct hv_err *err);
