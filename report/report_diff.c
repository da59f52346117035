#include "report/report_diff.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/report_stacks.h"
#include "common/hashidx.h"

void report_diff_free(struct report_diff *d)
{
    for (size_t i = 0; i < d->nstacks; i++)
        free(d->stacks[i].text);
    for (size_t i = 0; i < d->funcs.n; i++) {
        free(d->funcs.v[i].name);
        free(d->funcs.v[i].dso);
    }
    free(d->stacks);
    vec_free(&d->funcs);
    memset(d, 0, sizeof(*d));
}

/* Both stack lists sorted in the same order: one merge walk joins them, taking their texts. */
static int join_stacks(struct report_diff *d, struct report_stacks *a, struct report_stacks *b)
{
    d->stacks = calloc(a->n + b->n + 1, sizeof(*d->stacks));
    if (!d->stacks)
        return -1;
    size_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : report_stacks_cmp_text(a->v[i].text, b->v[j].text);
        struct diff_stack *s = &d->stacks[d->nstacks++];
        if (c <= 0) {
            s->text = a->v[i].text;
            a->v[i].text = NULL;
            s->base = a->v[i++].weight;
        }
        if (c >= 0) {
            if (s->text) {
                free(b->v[j].text);
            } else {
                s->text = b->v[j].text;
            }
            b->v[j].text = NULL;
            s->new = b->v[j++].weight;
        }
    }
    return 0;
}

struct func_key {
    const struct report_diff *d;
    const char *name, *dso;
    bool kernel;
};

static bool func_eq(const void *ctx, uint32_t idx)
{
    const struct func_key *k = ctx;
    const struct diff_func *f = &k->d->funcs.v[idx];
    return f->kernel == k->kernel && !strcmp(f->name, k->name) && !strcmp(f->dso, k->dso);
}

/* One profile's self and total per function (report_func_weights), added to the joined rows. */
static int add_funcs(struct report_diff *d, struct hashidx *h, const struct profile *p, bool is_new)
{
    struct report_func_weight *w = report_func_weights(p);
    int rc = -1;
    if (!w)
        goto done;
    for (size_t fn = 0; fn < p->funcs.n; fn++) {
        if (!w[fn].total)
            continue;
        const struct prof_func *pf = &p->funcs.v[fn];
        const char *dso =
            pf->module == PROF_NONE ? "[unknown]" : profile_module_basename(p, pf->module);
        struct func_key key = {d, pf->name, dso, w[fn].kernel};
        uint64_t hv = hashidx_bytes(HASHIDX_SEED, pf->name, strlen(pf->name));
        hv = hashidx_bytes(hv, dso, strlen(dso) + 1);
        hv = hashidx_u64(hv, w[fn].kernel);
        uint32_t idx = hashidx_find(h, hv, func_eq, &key);
        if (idx == HASHIDX_NONE) {
            if (!vec_reserve(&d->funcs, 1))
                goto done;
            struct diff_func *nfunc = &d->funcs.v[d->funcs.n];
            *nfunc = (struct diff_func){
                .name = strdup(pf->name), .dso = strdup(dso), .kernel = w[fn].kernel};
            if (!nfunc->name || !nfunc->dso) {
                free(nfunc->name);
                free(nfunc->dso);
                goto done;
            }
            idx = (uint32_t)d->funcs.n++;
            if (hashidx_insert(h, hv, idx) < 0)
                goto done;
        }
        struct diff_func *df = &d->funcs.v[idx];
        *(is_new ? &df->new_self : &df->base_self) += w[fn].self;
        *(is_new ? &df->new_total : &df->base_total) += w[fn].total;
    }
    rc = 0;
done:
    free(w);
    return rc;
}

int report_diff_build(const struct profile *base, const struct profile *new, struct report_diff *d,
                      struct hv_err *err)
{
    memset(d, 0, sizeof(*d));
    struct report_stacks a = {0}, b = {0};
    struct hashidx h;
    hashidx_init(&h);
    int rc = -1;
    if (report_stacks_build(base, NULL, &a, err) < 0 || report_stacks_build(new, NULL, &b, err) < 0)
        goto done;
    d->base = base;
    d->new = new;
    d->base_total = profile_total_weight(base);
    d->new_total = profile_total_weight(new);
    if (join_stacks(d, &a, &b) < 0 || add_funcs(d, &h, base, false) < 0 ||
        add_funcs(d, &h, new, true) < 0) {
        hv_errk(err, HV_ERR_NO_MEMORY, "diff: out of memory");
        goto done;
    }
    rc = 0;
done:
    if (rc < 0)
        report_diff_free(d);
    report_stacks_free(&a);
    report_stacks_free(&b);
    hashidx_free(&h);
    return rc;
}

double report_diff_scaled_base(const struct report_diff *d, const struct report_diff_opts *o,
                               uint64_t base)
{
    if (o->raw || !d->base_total)
        return (double)base;
    return (double)base * (double)d->new_total / (double)d->base_total;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static double dself(const struct report_diff *d, const struct diff_func *f)
{
    return pct(f->new_self, d->new_total) - pct(f->base_self, d->base_total);
}

static double dtotal(const struct report_diff *d, const struct diff_func *f)
{
    return pct(f->new_total, d->new_total) - pct(f->base_total, d->base_total);
}

/* qsort has no context argument: the order is computed into a key array first. */
struct order {
    double self, total;
    const struct diff_func *f;
};

static int cmp_order(const void *a, const void *b)
{
    const struct order *x = a, *y = b;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    int c = strcmp(x->f->name, y->f->name);
    return c ? c : strcmp(x->f->dso, y->f->dso);
}

const struct diff_func **report_diff_ranked(const struct report_diff *d)
{
    size_t n = d->funcs.n ? d->funcs.n : 1;
    struct order *ord = malloc(n * sizeof(*ord));
    const struct diff_func **out = malloc(n * sizeof(*out));
    if (!ord || !out) {
        free(ord);
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < d->funcs.n; i++)
        ord[i] = (struct order){fabs(dself(d, &d->funcs.v[i])), fabs(dtotal(d, &d->funcs.v[i])),
                                &d->funcs.v[i]};
    if (d->funcs.n > 1)
        qsort(ord, d->funcs.n, sizeof(*ord), cmp_order);
    for (size_t i = 0; i < d->funcs.n; i++)
        out[i] = ord[i].f;
    free(ord);
    return out;
}

int report_diff_write_top(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                          struct hv_err *err)
{
    unsigned limit = o->limit ? o->limit : 50;
    const struct diff_func **ord = report_diff_ranked(d);
    if (!ord)
        return hv_errk(err, HV_ERR_NO_MEMORY, "diff: out of memory");
    fprintf(out,
            "# hvprof diff: base %s (%" PRIu64 " samples), new %s (%" PRIu64 " samples)\n"
            "# shares of each recording's own samples; Delta = new - base, in percentage points;\n"
            "# the largest changes of self share first\n#\n",
            o->base_name ? o->base_name : "base", d->base_total, o->new_name ? o->new_name : "new",
            d->new_total);
    fprintf(out, "# %9s %8s %8s  %9s %8s %8s  %-24s %s\n", "Base self", "New self", "Delta",
            "Base chld", "New chld", "Delta", "Shared Object", "Symbol");
    for (size_t i = 0; i < d->funcs.n && i < limit; i++) {
        const struct diff_func *f = ord[i];
        fprintf(out, "  %8.2f%% %7.2f%% %+7.2f%%  %8.2f%% %7.2f%% %+7.2f%%  %-24s [%c] %s\n",
                pct(f->base_self, d->base_total), pct(f->new_self, d->new_total), dself(d, f),
                pct(f->base_total, d->base_total), pct(f->new_total, d->new_total), dtotal(d, f),
                f->dso, f->kernel ? 'k' : '.', f->name);
    }
    free(ord);
    return 0;
}

int report_diff_write_folded(const struct report_diff *d, const struct report_diff_opts *o,
                             FILE *out, struct hv_err *err)
{
    (void)err;
    for (size_t i = 0; i < d->nstacks; i++) {
        const struct diff_stack *s = &d->stacks[i];
        fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", s->text,
                (uint64_t)llround(report_diff_scaled_base(d, o, s->base)), s->new);
    }
    return 0;
}

int report_diff_write_svg(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                          struct hv_err *err)
{
    /* The renderer splits texts in place, so copies. */
    struct report_stacks st = {0};
    size_t n = d->nstacks ? d->nstacks : 1;
    double *base = malloc(n * sizeof(*base)), *now = malloc(n * sizeof(*now));
    st.v = calloc(n, sizeof(*st.v));
    int rc = -1;
    if (!base || !now || !st.v)
        goto oom;
    /* Widths: by default the union of both (each stack as wide as the larger of its new and
     * scaled base counts), so that code gone from NEW is drawn at its BASE width, in blue;
     * --widths new or base draws one recording's alone (Gregg's difffolded orientations). */
    for (size_t i = 0; i < d->nstacks; i++) {
        st.v[st.n].text = strdup(d->stacks[i].text);
        if (!st.v[st.n].text)
            goto oom;
        double b = report_diff_scaled_base(d, o, d->stacks[i].base);
        double w = o->widths == REPORT_DIFF_WIDTHS_NEW    ? (double)d->stacks[i].new
                   : o->widths == REPORT_DIFF_WIDTHS_BASE ? b
                   : b > (double)d->stacks[i].new         ? b
                                                          : (double)d->stacks[i].new;
        st.v[st.n].weight = (uint64_t)llround(w);
        base[st.n] = b;
        now[st.n++] = (double)d->stacks[i].new;
    }
    char title[512];
    if (o->title)
        snprintf(title, sizeof(title), "%s", o->title);
    else
        snprintf(title, sizeof(title), "hvprof diff: %s -> %s (red: more, blue: less)",
                 o->base_name ? o->base_name : "base", o->new_name ? o->new_name : "new");
    const struct report_svg_diff diff = {
        .base = base,
        .now = now,
        .legend = o->widths == REPORT_DIFF_WIDTHS_NEW
                      ? "more in NEW / less in NEW; widths: the NEW samples"
                  : o->widths == REPORT_DIFF_WIDTHS_BASE
                      ? "more in NEW / less in NEW; widths: the BASE samples (scaled)"
                      : "more in NEW / less in NEW (gone from NEW: drawn at its BASE width); "
                        "widths: the larger of "
                        "the two"};
    rc = report_svg_render(&st, &diff, title, out, err);
    goto done;
oom:
    hv_errk(err, HV_ERR_NO_MEMORY, "diff: out of memory");
done:
    report_stacks_free(&st);
    free(base);
    free(now);
    return rc;
}
