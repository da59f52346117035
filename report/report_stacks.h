/* Stacks aggregated by their root-first frame names (process name first), shared by the folded
 * and SVG writers: one entry per distinct stack with its total weight. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "report/profile.h"

struct report_stack {
    char *text; /* "proc;root;...;leaf" with ';' and control characters removed from names */
    uint64_t weight;
};

struct report_stacks {
    struct report_stack *v;
    size_t n, cap;
};

/* Build, sorted frame by frame (all stacks below one frame are adjacent). With kernel_suffix,
 * guest-kernel frames end in "_[k]" (stackcollapse-perf's --kernel convention, which
 * FlameGraph colours apart). */
int report_stacks_build(const struct profile *p, bool kernel_suffix, struct report_stacks *out,
                        struct hv_err *err);
void report_stacks_free(struct report_stacks *s);
