/* The exit table of `hvprof report --exits` (docs/exits.md), like `perf kvm stat`'s: per exit
 * site (the root frame of each exit event, named by the recording) how many exits, their share,
 * and the host time from each exit to the end of its handling: total, mean and max. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

struct site_row {
    uint32_t func; /* the root frame's function: the site's name */
    uint64_t exits, ns, max_ns;
};

static int by_exits(const void *a, const void *b)
{
    const struct site_row *x = a, *y = b;
    if (x->exits != y->exits)
        return x->exits > y->exits ? -1 : 1;
    return x->func < y->func ? -1 : x->func > y->func;
}

int report_write_exit_table(const struct profile *p, FILE *out, struct hv_err *err)
{
    size_t nf = p->funcs.n;
    struct site_row *rows = calloc(nf ? nf : 1, sizeof(*rows));
    if (!rows)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    uint64_t exits = 0, ns = 0, unnamed = 0, walked = 0;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        if (!s->nframes)
            continue;
        uint32_t loc = p->frames.v[s->first + s->nframes - 1].loc;
        if (loc == PROF_NONE || p->locs.v[loc].func >= nf) {
            unnamed += s->weight;
            continue;
        }
        struct site_row *r = &rows[p->locs.v[loc].func];
        r->func = p->locs.v[loc].func;
        r->exits += s->weight;
        r->ns += s->exit_ns;
        if (s->exit_ns > r->max_ns)
            r->max_ns = s->exit_ns;
        exits += s->weight;
        ns += s->exit_ns;
        walked += s->nframes > 1 ? s->weight : 0; /* the guest's frames under the site */
    }
    if (nf > 1)
        qsort(rows, nf, sizeof(*rows), by_exits);
    size_t sites = 0;
    while (sites < nf && rows[sites].exits)
        sites++;
    fprintf(out,
            "# hvprof report --exits: %" PRIu64 " exits at %zu sites, %.3f ms of host time "
            "handling them\n#\n# %10s %7s %11s %10s %10s  %s\n",
            exits, sites, (double)ns / 1e6, "Exits", "%", "Host ms", "Mean us", "Max us", "Site");
    for (size_t i = 0; i < sites; i++) {
        const struct site_row *r = &rows[i];
        fprintf(out, "  %10" PRIu64 " %6.2f%% %11.3f %10.2f %10.2f  %s\n", r->exits,
                exits ? 100.0 * (double)r->exits / (double)exits : 0.0, (double)r->ns / 1e6,
                (double)r->ns / (double)r->exits / 1e3, (double)r->max_ns / 1e3,
                p->funcs.v[r->func].name);
    }
    if (unnamed)
        fprintf(out, "# %" PRIu64 " exits at sites the recording does not name\n", unnamed);
    fprintf(out, "#\n# Their stacks: the guest code that made each exit, rooted at its site");
    if (walked < exits)
        fprintf(out,
                "; walked for %" PRIu64 " of the %" PRIu64 " exits (record's budget of walk "
                "time, or --exit-stacks-every), the rest at their site alone",
                walked, exits);
    fputc('\n', out);
    free(rows);
    return 0;
}
