#include "report/report_callgraph.h"

#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"

void callgraph_free(struct callgraph *g)
{
    free(g->funcs);
    vec_free(&g->edges);
    free(g->by_callee);
    free(g->order);
    memset(g, 0, sizeof(*g));
}

struct edge_key {
    const struct callgraph *g;
    uint32_t caller, callee;
};

static bool edge_eq(const void *ctx, uint32_t idx)
{
    const struct edge_key *k = ctx;
    return k->g->edges.v[idx].caller == k->caller && k->g->edges.v[idx].callee == k->callee;
}

static int cmp_by_caller(const void *a, const void *b)
{
    const struct callgraph_edge *x = a, *y = b;
    if (x->caller != y->caller)
        return x->caller < y->caller ? -1 : 1;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

static int cmp_by_callee(const void *a, const void *b, void *ctx)
{
    const struct callgraph_edge *e = ctx;
    const struct callgraph_edge *x = &e[*(const uint32_t *)a], *y = &e[*(const uint32_t *)b];
    if (x->callee != y->callee)
        return x->callee < y->callee ? -1 : 1;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return x->caller < y->caller ? -1 : x->caller > y->caller;
}

static int cmp_order(const void *a, const void *b, void *ctx)
{
    const struct report_func_weight *f = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    if (f[i].total != f[j].total)
        return f[i].total > f[j].total ? -1 : 1;
    if (f[i].self != f[j].self)
        return f[i].self > f[j].self ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* The edge (caller, callee), added with weight 0 if new; its index, or UINT32_MAX when out of
 * memory. */
static uint32_t edge_at(struct callgraph *g, struct hashidx *h, uint32_t caller, uint32_t callee)
{
    struct edge_key k = {g, caller, callee};
    uint64_t hv = hashidx_u64(hashidx_u64(HASHIDX_SEED, caller), callee);
    uint32_t idx = hashidx_find(h, hv, edge_eq, &k);
    if (idx != HASHIDX_NONE)
        return idx;
    if (!vec_reserve(&g->edges, 1))
        return UINT32_MAX;
    g->edges.v[g->edges.n] = (struct callgraph_edge){caller, callee, 0};
    if (hashidx_insert(h, hv, (uint32_t)g->edges.n) < 0)
        return UINT32_MAX;
    return (uint32_t)g->edges.n++;
}

int callgraph_build(const struct profile *p, struct callgraph *g, struct hv_err *err)
{
    memset(g, 0, sizeof(*g));
    size_t nf = p->funcs.n;
    struct hashidx h;
    hashidx_init(&h);
    /* The last sample that counted an edge: once per sample. */
    size_t *seen_e = NULL, seen_cap = 0;
    g->funcs = report_func_weights(p);
    g->order = malloc((nf ? nf : 1) * sizeof(*g->order));
    g->nfuncs = nf;
    if (!g->funcs || !g->order)
        goto oom;
    for (size_t i = 0; i < nf; i++)
        g->order[i] = (uint32_t)i;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        g->total += s->weight;
        uint32_t callee = UINT32_MAX; /* the function of the frame before (leaf-side of) this one */
        for (uint32_t f = 0; f < s->nframes; f++) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            if (fr->loc >= p->locs.n) {
                callee = UINT32_MAX;
                continue;
            }
            uint32_t fn = p->locs.v[fr->loc].func;
            if (callee != UINT32_MAX) {
                uint32_t e = edge_at(g, &h, fn, callee);
                if (e == UINT32_MAX)
                    goto oom;
                if (e >= seen_cap) { /* indexed by edge: new slots seen by no sample */
                    size_t nc = seen_cap;
                    size_t *v = hv_vec_grow(seen_e, &nc, (size_t)e + 1, sizeof(*v));
                    if (!v)
                        goto oom;
                    for (size_t k = seen_cap; k < nc; k++)
                        v[k] = SIZE_MAX;
                    seen_e = v;
                    seen_cap = nc;
                }
                if (seen_e[e] != i) {
                    seen_e[e] = i;
                    g->edges.v[e].weight += s->weight;
                }
            }
            callee = fn;
        }
    }
    g->by_callee = malloc((g->edges.n ? g->edges.n : 1) * sizeof(*g->by_callee));
    if (!g->by_callee)
        goto oom;
    if (g->edges.n > 1)
        qsort(g->edges.v, g->edges.n, sizeof(*g->edges.v), cmp_by_caller);
    for (size_t i = 0; i < g->edges.n; i++)
        g->by_callee[i] = (uint32_t)i;
    if (g->edges.n > 1)
        qsort_r(g->by_callee, g->edges.n, sizeof(*g->by_callee), cmp_by_callee, g->edges.v);
    if (nf > 1)
        qsort_r(g->order, nf, sizeof(*g->order), cmp_order, g->funcs);
    free(seen_e);
    hashidx_free(&h);
    return 0;
oom:
    free(seen_e);
    hashidx_free(&h);
    callgraph_free(g);
    return hv_errk(err, HV_ERR_NO_MEMORY, "call graph: out of memory");
}

void callgraph_callees(const struct callgraph *g, uint32_t f, size_t *first, size_t *n)
{
    size_t lo = 0, hi = g->edges.n; /* the first edge with caller >= f */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->edges.v[mid].caller < f)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < g->edges.n && g->edges.v[end].caller == f)
        end++;
    *first = lo;
    *n = end - lo;
}

void callgraph_callers(const struct callgraph *g, uint32_t f, size_t *first, size_t *n)
{
    size_t lo = 0, hi = g->edges.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->edges.v[g->by_callee[mid]].callee < f)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < g->edges.n && g->edges.v[g->by_callee[end]].callee == f)
        end++;
    *first = lo;
    *n = end - lo;
}
