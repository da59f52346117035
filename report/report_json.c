/* `--format json`: the top table's numbers with each function's callers and callees, for
 * programs (RFC 8259). Functions are listed once, most often on the stack first; a caller or
 * callee refers to one by its index in that list. Names are not guaranteed UTF-8: bytes outside
 * ASCII are written as '?', so the document always parses. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"
#include "common/vector.h"
#include "report/report.h"
#include "report/report_callgraph.h"
#include "report/report_json.h"

void report_json_str(FILE *out, const char *s)
{
    report_json_strn(out, s, strlen(s));
}

void report_json_strn(FILE *out, const char *s, size_t n)
{
    fputc('"', out);
    for (const char *end = s + n; s < end; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c >= 0x7f ? '?' : c, out);
    }
    fputc('"', out);
}

static void edges(FILE *out, const struct callgraph *g, const uint32_t *pos, size_t first, size_t n,
                  bool callers)
{
    for (size_t k = 0; k < n; k++) {
        const struct callgraph_edge *e =
            callers ? &g->edges.v[g->by_callee[first + k]] : &g->edges.v[first + k];
        fprintf(out, "%s{\"function\": %" PRIu32 ", \"samples\": %" PRIu64 "}", k ? ", " : "",
                pos[callers ? e->caller : e->callee], e->weight);
    }
}

/* A stack as the document writes it: its shown ids, vCPU, mode and the functions of its frames
 * (two profile entries of one such key, as a profile of every sample has, are one). */
struct stack_key {
    const struct profile *p;
    const uint32_t *pos;
    size_t nfuncs;
    const struct prof_sample *s;
};

static uint32_t frame_fn(const struct stack_key *k, const struct prof_sample *s, uint32_t f)
{
    const struct prof_frame *fr = &k->p->frames.v[s->first + f];
    uint32_t fn = fr->loc < k->p->locs.n ? k->p->locs.v[fr->loc].func : PROF_NONE;
    return fn < k->nfuncs ? k->pos[fn] : UINT32_MAX;
}

static bool same_stack(const struct stack_key *k, const struct prof_sample *a)
{
    const struct profile *p = k->p;
    const struct prof_sample *b = k->s;
    if (profile_shown_pid(p, a->pid) != profile_shown_pid(p, b->pid) ||
        profile_shown_tid(p, a->pid, a->tid) != profile_shown_tid(p, b->pid, b->tid) ||
        a->vcpu != b->vcpu || (a->cpl == PROF_CPL_KERNEL) != (b->cpl == PROF_CPL_KERNEL) ||
        a->nframes != b->nframes)
        return false;
    for (uint32_t f = 0; f < a->nframes; f++)
        if (frame_fn(k, a, f) != frame_fn(k, b, f))
            return false;
    return true;
}

struct stack_rows {
    VECTOR(const struct prof_sample *) first; /* each row's first entry */
    VECTOR(uint64_t) weight;
    const struct stack_key *key;
};

static bool row_eq(const void *ctx, uint32_t idx)
{
    const struct stack_rows *r = ctx;
    return same_stack(r->key, r->first.v[idx]);
}

static int write_stacks(FILE *out, const struct profile *p, size_t nfuncs, const uint32_t *pos)
{
    struct stack_rows rows = {0};
    struct hashidx h;
    hashidx_init(&h);
    int rc = -1;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *sm = &p->samples.v[i];
        struct stack_key k = {p, pos, nfuncs, sm};
        uint64_t hv = hashidx_u64(HASHIDX_SEED, profile_shown_pid(p, sm->pid));
        hv = hashidx_u64(hv, profile_shown_tid(p, sm->pid, sm->tid));
        hv = hashidx_u64(hv, sm->vcpu * 2u + (sm->cpl == PROF_CPL_KERNEL));
        for (uint32_t f = 0; f < sm->nframes; f++)
            hv = hashidx_u64(hv, frame_fn(&k, sm, f));
        rows.key = &k;
        uint32_t idx = hashidx_find(&h, hv, row_eq, &rows);
        if (idx != HASHIDX_NONE) {
            rows.weight.v[idx] += sm->weight;
            continue;
        }
        if (!vec_append(&rows.first, sm) || !vec_append(&rows.weight, sm->weight) ||
            hashidx_insert(&h, hv, (uint32_t)(rows.first.n - 1)) < 0)
            goto done;
    }
    for (size_t i = 0; i < rows.first.n; i++) {
        const struct prof_sample *sm = rows.first.v[i];
        struct stack_key k = {p, pos, nfuncs, sm};
        fprintf(out,
                "%s\n  {\"pid\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"vcpu\": %u, \"kernel\": %s, "
                "\"weight\": %" PRIu64 ", \"frames\": [",
                i ? "," : "", profile_shown_pid(p, sm->pid), profile_shown_tid(p, sm->pid, sm->tid),
                sm->vcpu, sm->cpl == PROF_CPL_KERNEL ? "true" : "false", rows.weight.v[i]);
        for (uint32_t f = 0; f < sm->nframes; f++)
            fprintf(out, f ? ", %" PRIu32 : "%" PRIu32, frame_fn(&k, sm, f));
        fputs("]}", out);
    }
    rc = 0;
done:
    vec_free(&rows.first);
    vec_free(&rows.weight);
    hashidx_free(&h);
    return rc;
}

int report_write_json(const struct profile *p, const struct report_opts *o, FILE *out,
                      struct hv_err *err)
{
    (void)o;
    struct callgraph g;
    if (callgraph_build(p, &g, err) < 0)
        return -1;
    struct report_group *procs = NULL, *vcpus = NULL;
    size_t nprocs = 0, nvcpus = 0, nlisted = 0;
    uint32_t *pos = malloc((g.nfuncs ? g.nfuncs : 1) * sizeof(*pos));
    if (pos)
        memset(pos, 0xff, (g.nfuncs ? g.nfuncs : 1) * sizeof(*pos));
    int rc = -1;
    if (!pos || report_group_by(p, false, &procs, &nprocs) < 0 ||
        report_group_by(p, true, &vcpus, &nvcpus) < 0) {
        hv_errk(err, HV_ERR_NO_MEMORY, "json: out of memory");
        goto done;
    }
    while (nlisted < g.nfuncs && g.funcs[g.order[nlisted]].total)
        nlisted++;
    for (size_t i = 0; i < nlisted; i++)
        pos[g.order[i]] = (uint32_t)i;
    /* What the document is and which recording it is of (docs/json.md). */
    const struct prof_header *h = &p->header;
    fprintf(out, "{\"format\": \"hvprof-report\", \"version\": %d,\n\"recording\": {\"guest\": ",
            REPORT_JSON_VERSION);
    report_json_str(out, h->guest);
    fputs(", \"guest_kernel\": ", out);
    report_json_str(out, h->osrelease);
    fputs(", \"mode\": ", out);
    report_json_str(out, h->mode);
    fputs(", \"hvprof_version\": ", out);
    report_json_str(out, h->version);
    fputs(", \"command_line\": ", out);
    report_json_str(out, h->command);
    fprintf(out,
            ", \"hz\": %" PRIu64 ", \"vcpus\": %u, \"start_unix_ns\": %" PRIu64
            ", \"duration_s\": %.6f},\n",
            h->hz, h->vcpus, h->start_unix_ns, report_duration_s(p));
    fprintf(out,
            "\"unit\": \"%s\", \"samples\": %" PRIu64 ", \"period_ns\": %" PRIu64
            ", \"functions\": [",
            p->weight_us ? "microseconds" : "samples", g.total, p->period_ns);
    for (size_t i = 0; i < nlisted; i++) {
        uint32_t f = g.order[i];
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
        report_json_str(out, p->funcs.v[f].name);
        fputs(", \"dso\": ", out);
        report_json_str(out, report_func_dso(p, f));
        fprintf(out,
                ", \"kernel\": %s, \"self\": %" PRIu64 ", \"total\": %" PRIu64 ", \"callers\": [",
                g.funcs[f].kernel ? "true" : "false", g.funcs[f].self, g.funcs[f].total);
        size_t first, n;
        callgraph_callers(&g, f, &first, &n);
        edges(out, &g, pos, first, n, true);
        fputs("], \"callees\": [", out);
        callgraph_callees(&g, f, &first, &n);
        edges(out, &g, pos, first, n, false);
        fputs("]}", out);
    }
    fputs("],\n\"processes\": [", out);
    for (size_t i = 0; i < nprocs; i++) {
        fprintf(out, "%s\n  {\"pid\": %" PRIu64 ", \"name\": ", i ? "," : "",
                profile_shown_pid(p, procs[i].key));
        report_json_str(out, profile_process_name(p, procs[i].key));
        fprintf(out, ", \"samples\": %" PRIu64 ", \"kernel_samples\": %" PRIu64 "}",
                procs[i].weight, procs[i].kernel);
    }
    fputs("],\n\"vcpus\": [", out);
    for (size_t i = 0; i < nvcpus; i++)
        fprintf(out,
                "%s\n  {\"vcpu\": %" PRIu64 ", \"samples\": %" PRIu64
                ", \"kernel_samples\": %" PRIu64 "}",
                i ? "," : "", vcpus[i].key, vcpus[i].weight, vcpus[i].kernel);
    fputs("],\n\"stacks\": [", out);
    if (write_stacks(out, p, g.nfuncs, pos) < 0) {
        hv_errk(err, HV_ERR_NO_MEMORY, "json: out of memory");
        goto done;
    }
    fputs("]}\n", out);
    rc = 0;
done:
    free(pos);
    free(procs);
    free(vcpus);
    callgraph_free(&g);
    return rc;
}
