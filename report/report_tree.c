/* The caller/callee view (`--format tree`): for each of the functions most often on the stack,
 * as in `top`, its callers above it and its callees below it, each with the share of samples in
 * which that call was on the stack (gprof's call graph entries, perf report -g's callers and
 * callees in one listing). */
#include <inttypes.h>

#include "report/report.h"
#include "report/report_callgraph.h"

#define TREE_EDGES 10 /* callers and callees listed per function; the rest counted */

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void put_func(FILE *out, const struct profile *p, const struct callgraph *g, uint32_t f)
{
    fprintf(out, "[%c] %s (%s)\n", g->funcs[f].kernel ? 'k' : '.', p->funcs.v[f].name,
            report_func_dso(p, f));
}

/* report -v: where the function is in its sources and where its names came from. */
static void put_func_origin(FILE *out, const struct profile *p, uint32_t f)
{
    const struct prof_func *fn = &p->funcs.v[f];
    char origin[4200];
    if (fn->module == PROF_NONE || fn->module >= p->modules.n)
        snprintf(origin, sizeof(origin), "none (no mapping covers it)");
    else
        sym_source_origin(&p->modules.v[fn->module].src, origin, sizeof(origin));
    if (fn->file && fn->start_line)
        fprintf(out, "                source %s:%u; names from %s\n", fn->file, fn->start_line,
                origin);
    else if (fn->file)
        fprintf(out, "                source %s; names from %s\n", fn->file, origin);
    else
        fprintf(out, "                names from %s\n", origin);
}

int report_write_tree(const struct profile *p, const struct report_opts *o, FILE *out,
                      struct hv_err *err)
{
    struct callgraph g;
    if (callgraph_build(p, &g, err) < 0)
        return -1;
    unsigned limit = o->top_limit ? o->top_limit : 50;
    fprintf(out,
            "# hvprof report: %" PRIu64 " samples; callers and callees of the %u functions most "
            "often on the stack\n"
            "# each entry: Children and Self shares of the function, its callers above it (<-),\n"
            "# its callees below it (->), each with the share of samples in which that call was "
            "on the stack\n%s",
            g.total, limit,
            o->verbose ? "# under each: its source file and line, and where its names came from\n"
                       : "");
    for (size_t i = 0; i < g.nfuncs && i < limit; i++) {
        uint32_t f = g.order[i];
        if (!g.funcs[f].total)
            break;
        size_t first, n;
        fputc('\n', out);
        callgraph_callers(&g, f, &first, &n);
        for (size_t k = 0; k < n && k < TREE_EDGES; k++) {
            const struct callgraph_edge *e = &g.edges.v[g.by_callee[first + k]];
            fprintf(out, "  %16s %7.2f%%  <- ", "", pct(e->weight, g.total));
            put_func(out, p, &g, e->caller);
        }
        if (n > TREE_EDGES)
            fprintf(out, "  %16s %8s  <- %zu more callers\n", "", "", n - TREE_EDGES);
        fprintf(out, "  %7.2f%% %7.2f%%  ", pct(g.funcs[f].total, g.total),
                pct(g.funcs[f].self, g.total));
        put_func(out, p, &g, f);
        if (o->verbose)
            put_func_origin(out, p, f);
        callgraph_callees(&g, f, &first, &n);
        for (size_t k = 0; k < n && k < TREE_EDGES; k++) {
            const struct callgraph_edge *e = &g.edges.v[first + k];
            fprintf(out, "  %16s %7.2f%%  -> ", "", pct(e->weight, g.total));
            put_func(out, p, &g, e->callee);
        }
        if (n > TREE_EDGES)
            fprintf(out, "  %16s %8s  -> %zu more callees\n", "", "", n - TREE_EDGES);
    }
    callgraph_free(&g);
    return 0;
}
