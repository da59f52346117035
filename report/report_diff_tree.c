/* `hvprof diff --format tree`: the functions that changed most, each with its callers and
 * callees in both recordings (the report's tree, side by side): which call paths brought a
 * function's time or took it away. Functions and their neighbours are matched across the
 * recordings by (shared object, name, kernel or user), as the diff's table matches them. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_callgraph.h"
#include "report/report_diff.h"

#define TREE_FUNCS_DEFAULT 10 /* functions shown without --limit */
#define TREE_EDGES         8  /* callers, callees each */

/* The profile's function that is `f` of the diff, PROF_NONE if it has none. */
static uint32_t find_func(const struct profile *p, const struct callgraph *g,
                          const struct diff_func *f)
{
    for (uint32_t i = 0; i < p->funcs.n; i++)
        if (g->funcs[i].total && g->funcs[i].kernel == f->kernel &&
            !strcmp(p->funcs.v[i].name, f->name) && !strcmp(report_func_dso(p, i), f->dso))
            return i;
    return PROF_NONE;
}

struct neighbour {
    const char *name, *dso;
    uint64_t base, new;
};

/* One side's callers (or callees) of its function `fn` added to the list. */
static size_t add_side(struct neighbour *v, size_t n, size_t cap, const struct profile *p,
                       const struct callgraph *g, uint32_t fn, bool callers, bool is_new)
{
    if (fn == PROF_NONE)
        return n;
    size_t first, k;
    if (callers)
        callgraph_callers(g, fn, &first, &k);
    else
        callgraph_callees(g, fn, &first, &k);
    for (size_t e = 0; e < k; e++) {
        const struct callgraph_edge *ed =
            callers ? &g->edges.v[g->by_callee[first + e]] : &g->edges.v[first + e];
        uint32_t other = callers ? ed->caller : ed->callee;
        const char *name = p->funcs.v[other].name, *dso = report_func_dso(p, other);
        size_t j = 0;
        while (j < n && (strcmp(v[j].name, name) || strcmp(v[j].dso, dso)))
            j++;
        if (j == n) {
            if (n == cap)
                continue;
            v[n++] = (struct neighbour){name, dso, 0, 0};
        }
        *(is_new ? &v[j].new : &v[j].base) += ed->weight;
    }
    return n;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int by_change(const void *a, const void *b, void *ctx)
{
    const struct neighbour *x = a, *y = b;
    const uint64_t *tot = ctx;
    double dx = pct(x->new, tot[1]) - pct(x->base, tot[0]);
    double dy = pct(y->new, tot[1]) - pct(y->base, tot[0]);
    dx = dx < 0 ? -dx : dx;
    dy = dy < 0 ? -dy : dy;
    return dx > dy ? -1 : dx < dy ? 1 : strcmp(x->name, y->name);
}

static void print_side(FILE *out, const char *title, struct neighbour *v, size_t n,
                       const struct report_diff *d)
{
    uint64_t tot[2] = {d->base_total, d->new_total};
    if (n > 1)
        qsort_r(v, n, sizeof(*v), by_change, tot);
    fprintf(out, "    %s:%s\n", title, n ? "" : " none");
    for (size_t i = 0; i < n && i < TREE_EDGES; i++)
        fprintf(out, "      %7.2f%% %7.2f%% %+7.2f%%  %s (%s)\n", pct(v[i].base, d->base_total),
                pct(v[i].new, d->new_total),
                pct(v[i].new, d->new_total) - pct(v[i].base, d->base_total), v[i].name, v[i].dso);
}

int report_diff_write_tree(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                           struct hv_err *err)
{
    struct callgraph ga = {0}, gb = {0};
    const struct diff_func **ord = NULL;
    int rc = -1;
    if (callgraph_build(d->base, &ga, err) < 0 || callgraph_build(d->new, &gb, err) < 0)
        goto done;
    if (!(ord = report_diff_ranked(d))) {
        hv_errk(err, HV_ERR_NO_MEMORY, "diff: out of memory");
        goto done;
    }
    unsigned limit = o->limit ? o->limit : TREE_FUNCS_DEFAULT;
    fprintf(out,
            "# hvprof diff: base %s (%" PRIu64 " samples), new %s (%" PRIu64 " samples)\n"
            "# the functions that changed most, each with its callers and callees:\n"
            "# base share, new share, change (percentage points of each recording's samples)\n",
            o->base_name ? o->base_name : "base", d->base_total, o->new_name ? o->new_name : "new",
            d->new_total);
    for (size_t i = 0; i < d->funcs.n && i < limit; i++) {
        const struct diff_func *f = ord[i];
        fprintf(out, "\n[%c] %s (%s)\n  self %.2f%% -> %.2f%%, children %.2f%% -> %.2f%%\n",
                f->kernel ? 'k' : '.', f->name, f->dso, pct(f->base_self, d->base_total),
                pct(f->new_self, d->new_total), pct(f->base_total, d->base_total),
                pct(f->new_total, d->new_total));
        uint32_t fa = find_func(d->base, &ga, f), fb = find_func(d->new, &gb, f);
        struct neighbour v[64];
        size_t n = add_side(v, 0, 64, d->base, &ga, fa, true, false);
        n = add_side(v, n, 64, d->new, &gb, fb, true, true);
        print_side(out, "callers", v, n, d);
        n = add_side(v, 0, 64, d->base, &ga, fa, false, false);
        n = add_side(v, n, 64, d->new, &gb, fb, false, true);
        print_side(out, "callees", v, n, d);
    }
    rc = 0;
done:
    free(ord);
    callgraph_free(&ga);
    callgraph_free(&gb);
    return rc;
}
