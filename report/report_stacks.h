/* Stacks aggregated by their root-first frame names (process name first), shared by the folded
 * and SVG writers: one entry per distinct stack with its total weight. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "common/vector.h"
#include "report/profile.h"

struct report_stack {
    char *text; /* "proc;root;...;leaf" with ';' and control characters removed from names */
    uint64_t weight;
};

struct report_stacks {
    VECTOR_FIELDS(struct report_stack);
};

/* Build, sorted frame by frame (all stacks below one frame are adjacent). With kernel_suffix,
 * guest-kernel frames end in "_[k]" (stackcollapse-perf's --kernel convention, which
 * FlameGraph colours apart). */
int report_stacks_build(const struct profile *p, bool kernel_suffix, struct report_stacks *out,
                        struct hv_err *err);
void report_stacks_free(struct report_stacks *s);
/* The order report_stacks_build sorts by: frame-wise, ';' below every character a name holds
 * (a plain strcmp would put "a;b!" between "a;b" and "a;b;c"). */
int report_stacks_cmp_text(const char *a, const char *b);

/* A self-contained SVG flame graph of `st` (report_stacks_build with the kernel suffix; the
 * texts are split into frames in place). With `base`, one weight per stack (the base profile's,
 * scaled to st's total), a differential one: widths from st, red where st has more than the
 * base, blue where less (report_svg.c). */
int report_svg_render(struct report_stacks *st, const double *base, const char *title, FILE *out,
                      struct hv_err *err);
