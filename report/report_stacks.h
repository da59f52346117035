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

/* How stacks are shaped: the frames nearest the root kept, at most max_depth of them (0: all;
 * the process root not counted), and a function's direct recursion folded into one frame. */
struct report_stacks_opts {
    bool kernel_suffix; /* guest-kernel frames end in "_[k]" (stackcollapse-perf's --kernel
                         * convention, which FlameGraph colours apart) */
    unsigned max_depth;
    bool fold_recursion;
    /* A sample of a process in a container gets the container as its root frame, above the
     * process: "[podman 0123456789ab];worker;main;..." (docs/containers.md). */
    bool container_root;
};

/* Build, sorted frame by frame (all stacks below one frame are adjacent). */
int report_stacks_build(const struct profile *p, const struct report_stacks_opts *o,
                        struct report_stacks *out, struct hv_err *err);
void report_stacks_free(struct report_stacks *s);
/* The order report_stacks_build sorts by: frame-wise, ';' below every character a name holds
 * (a plain strcmp would put "a;b!" between "a;b" and "a;b;c"). */
int report_stacks_cmp_text(const char *a, const char *b);

/* A differential flame graph's numbers, one per stack of st: the base's samples (scaled to the
 * new total) and the new's; st's weights are the widths drawn (hvprof diff: the larger of the
 * two, so code that vanished is drawn at its base width). Colours from new - base: red more,
 * blue less (report_svg.c); the legend is said in the bar. */
struct report_svg_diff {
    const double *base, *now;
    const char *legend;
};

/* A self-contained SVG flame graph of `st` (report_stacks_build with the kernel suffix; the
 * texts are split into frames in place); differential with `diff`. */
int report_svg_render(struct report_stacks *st, const struct report_svg_diff *diff,
                      const char *title, FILE *out, struct hv_err *err);
