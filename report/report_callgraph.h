/* Who calls whom, from the sampled stacks: per function its self and total samples (as `top`
 * counts them) and per caller -> callee pair the samples in which the caller's frame sits
 * directly below the callee's (each pair counted once per sample, so recursion does not count a
 * sample twice). What the caller/callee view (`--format tree`) and the JSON report print. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/vector.h"
#include "report/profile.h"
#include "report/report.h"

struct callgraph_edge {
    uint32_t caller, callee; /* function indices (profile funcs) */
    uint64_t weight;
};

struct callgraph {
    struct report_func_weight *funcs; /* one per profile function (report_func_weights) */
    size_t nfuncs;
    VECTOR(struct callgraph_edge) edges; /* sorted by caller, then weight (descending) */
    uint32_t *by_callee; /* edge indices sorted by callee, then weight (descending) */
    uint32_t *order;     /* functions by total, then self (descending), then index */
    uint64_t total;      /* samples (weights) in the profile */
};

/* p symbolized (profile_symbolize). */
int callgraph_build(const struct profile *p, struct callgraph *g, struct hv_err *err);
void callgraph_free(struct callgraph *g);
/* The callers of f ([*first, *first + *n) in by_callee) and its callees ([*first, + *n) in
 * edges). */
void callgraph_callers(const struct callgraph *g, uint32_t f, size_t *first, size_t *n);
void callgraph_callees(const struct callgraph *g, uint32_t f, size_t *first, size_t *n);
