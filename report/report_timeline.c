/* The timeline: an FXT file for Perfetto's timeline view. Each vCPU is a thread of the VM
 * process (koids as schema/schema.h); on it, consecutive samples become nested duration
 * slices: the guest process at depth 0, then the symbolized stack root to leaf. Each guest
 * thread gets a track of its own in its guest process, with its samples' stacks the same way
 * (named with the guest's name and tid when the recording has them). A frame that
 * stays on the stack from one sample to the next extends its slice; a slice ends when the
 * next sample's stack diverges at or below it, or half-way into a gap of more than two sampling
 * periods (the vCPU was not sampled: halted, or preempted on the host). Exit events (`report
 * --exits`) are slices of their host time each, never merged. Each vCPU's steal time is a
 * counter. Guest processes and threads are named with kernel object records (Perfetto's FXT
 * importer, docs/sources.md §5). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fxt/encode.h"
#include "fxt/intern.h"
#include "schema/schema.h"
#include "report/report.h"

#define TL_MAX_DEPTH 512

struct tl {
    FILE *out;
    struct hv_err *err;
    struct fxt_intern in;
    struct fxt_str category;
    uint64_t buf[FXT_MAX_RECORD_WORDS + 1];
    uint64_t sbuf[FXT_MAX_RECORD_WORDS + 1];
};

static int emit(struct tl *t, const uint64_t *w, size_t n, const char *what)
{
    if (n == 0)
        return hv_errf(t->err, "timeline: cannot encode %s", what);
    if (fwrite(w, 8, n, t->out) != n)
        return hv_errf_errno(t->err, "timeline: write");
    return 0;
}

static struct fxt_str str(struct tl *t, const char *s, int *rc)
{
    size_t nw = 0;
    struct fxt_str r = fxt_intern_str(&t->in, s, strlen(s), t->sbuf, FXT_MAX_RECORD_WORDS, &nw);
    if (nw && fwrite(t->sbuf, 8, nw, t->out) != nw)
        *rc = hv_errf_errno(t->err, "timeline: write");
    return r;
}

struct open_slice {
    uint64_t key; /* pid at depth 0, function index below */
    uint64_t begin;
    const char *name;
    uint64_t pid;
};

/* Where slices go: a vCPU of the VM process, or a guest thread of its guest process. */
struct track {
    uint64_t pid, tid;
    bool vcpu; /* vCPU tracks start with a guest-process slice */
};

/* Slices are written as begin and end events, in the order they open and close: a parent's
 * begin always precedes its children's, and a child ends before its parent. Perfetto sorts a
 * track's events by time and breaks ties by file order, nesting each new slice under the open
 * one; complete events (written when a slice closes, so children first) put leaf functions at
 * the top whenever a parent and its child start together, which with sampling is always. */
static int slice_event(struct tl *t, struct track tr, const struct open_slice *s, bool begin,
                       bool process, uint64_t ts)
{
    int rc = 0;
    struct fxt_arg arg = {.type = FXT_ARG_U64};
    struct fxt_event ev = {.type = begin ? FXT_EV_BEGIN : FXT_EV_END,
                           .ts = ts,
                           .thread = {.index = 0, .pid = tr.pid, .tid = tr.tid},
                           .category = t->category};
    ev.name = str(t, s->name, &rc);
    if (begin && process) { /* the process slice says which process it is */
        arg.name = str(t, "pid", &rc);
        arg.v.u64 = s->pid;
        ev.args = &arg;
        ev.nargs = 1;
    }
    if (rc < 0 || emit(t, t->buf, fxt_enc_event(t->buf, FXT_MAX_RECORD_WORDS, &ev), "slice") < 0)
        return -1;
    return 0;
}

static int close_slices(struct tl *t, struct track tr, struct open_slice *st, unsigned from,
                        unsigned *depth, uint64_t end)
{
    while (*depth > from) {
        --*depth;
        if (slice_event(t, tr, &st[*depth], false, false, end) < 0)
            return -1;
    }
    return 0;
}

static uint64_t exit_ticks(const struct profile *p, const struct prof_sample *s)
{
    uint64_t tps = p->ticks_per_sec ? p->ticks_per_sec : 1000000000ull;
    uint64_t d = (uint64_t)((double)s->exit_ns * (double)tps / 1e9);
    return d ? d : 1;
}

static struct track track_of(const struct prof_sample *s, bool by_thread)
{
    if (by_thread)
        return (struct track){s->pid, s->tid, false};
    return (struct track){HVFXT_KOID_VM, hvfxt_koid_vcpu(s->vcpu), true};
}

/* Samples in `order` (sorted by track, then time) as nested slices on their tracks. */
static int lay_out(struct tl *t, const struct profile *p, const uint32_t *order, size_t n,
                   uint64_t period, uint64_t tps, bool by_thread, struct open_slice *st)
{
    unsigned depth = 0;
    struct track tr = {0};
    for (size_t i = 0; i < n; i++) {
        const struct prof_sample *s = &p->samples.v[order[i]];
        const struct prof_sample *prev = i ? &p->samples.v[order[i - 1]] : NULL;
        struct track cur = track_of(s, by_thread);
        bool same_track = prev && cur.pid == tr.pid && cur.tid == tr.tid;
        /* An off-CPU record (`report --off-cpu`, `--wall`) stands for the time before it: its
         * slices span it, from no earlier than the track's last sample. */
        uint64_t at = s->ts;
        if (s->off_cpu_ns) {
            uint64_t d = (uint64_t)((double)s->off_cpu_ns * (double)tps / 1e9);
            at = s->ts > d ? s->ts - d : 0;
            if (same_track && at < prev->ts)
                at = prev->ts;
        }
        if (prev && (!same_track || at - prev->ts > 2 * period)) {
            uint64_t end = prev->ts + period / 2;
            if (same_track && end > at)
                end = at;
            if (close_slices(t, tr, st, 0, &depth, end) < 0)
                return -1;
        }
        tr = cur;
        /* The new stack, root first: the process (on a vCPU), then frames outermost to leaf. */
        unsigned nw = 0, keep = 0;
        struct open_slice want[TL_MAX_DEPTH];
        uint64_t shown = profile_shown_pid(p, s->pid); /* the guest's pid when recorded */
        if (!by_thread)
            want[nw++] = (struct open_slice){profile_process_row(p, s->pid), at,
                                             profile_process_name(p, s->pid), shown};
        for (uint32_t f = s->nframes; f-- > 0 && nw < TL_MAX_DEPTH;) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            uint32_t fn = fr->loc < p->locs.n ? p->locs.v[fr->loc].func : PROF_NONE;
            want[nw++] =
                (struct open_slice){fn, at, fn == PROF_NONE ? "?" : p->funcs.v[fn].name, shown};
        }
        while (keep < depth && keep < nw && st[keep].key == want[keep].key)
            keep++;
        if (close_slices(t, tr, st, keep, &depth, at) < 0)
            return -1;
        for (; depth < nw; depth++) {
            st[depth] = want[depth];
            if (slice_event(t, tr, &st[depth], true, depth == 0 && tr.vcpu, at) < 0)
                return -1;
        }
        /* Off the CPU until the record's time, never merged with what comes next. */
        if (s->off_cpu_ns) {
            if (close_slices(t, tr, st, 0, &depth, s->ts > at ? s->ts : at + 1) < 0)
                return -1;
            continue;
        }
        /* An exit event lasts its host time, from the exit to the re-entry (at least a tick,
         * to be seen), and is never merged with the next: the guest ran between them. */
        if (p->exits) {
            uint64_t end = s->ts + exit_ticks(p, s);
            const struct prof_sample *next = i + 1 < n ? &p->samples.v[order[i + 1]] : NULL;
            struct track nt = next ? track_of(next, by_thread) : (struct track){0};
            if (next && nt.pid == tr.pid && nt.tid == tr.tid && next->ts < end)
                end = next->ts; /* never past the next on its track (clocks read apart) */
            if (close_slices(t, tr, st, 0, &depth, end) < 0)
                return -1;
        }
    }
    if (n && close_slices(t, tr, st, 0, &depth, p->samples.v[order[n - 1]].ts + period / 2) < 0)
        return -1;
    return 0;
}

/* Steal time as a counter per vCPU (the recording's vcpu_steal markers): the share of each
 * interval between two markers that the vCPU's host thread waited for a CPU, in percent, from
 * the first of them; 0 from the last. Perfetto's importer makes a counter track of the VM
 * process per event name and argument ("vcpu 0 steal:percent"). */
static int cmp_steal(const void *a, const void *b, void *ctx)
{
    const struct profile *p = ctx;
    const struct prof_steal *x = &p->steal.v[*(const uint32_t *)a];
    const struct prof_steal *y = &p->steal.v[*(const uint32_t *)b];
    if (x->vcpu != y->vcpu)
        return x->vcpu < y->vcpu ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int steal_counters(struct tl *t, const struct profile *p, uint64_t tps)
{
    if (!p->steal.n)
        return 0;
    uint32_t *o = malloc(p->steal.n * sizeof(*o));
    if (!o)
        return hv_errk(t->err, HV_ERR_NO_MEMORY, "timeline: out of memory");
    for (size_t i = 0; i < p->steal.n; i++)
        o[i] = (uint32_t)i;
    qsort_r(o, p->steal.n, sizeof(*o), cmp_steal, (void *)p);
    int rc = 0;
    for (size_t i = 0; i < p->steal.n && rc == 0; i++) {
        const struct prof_steal *a = &p->steal.v[o[i]];
        const struct prof_steal *b = i + 1 < p->steal.n ? &p->steal.v[o[i + 1]] : NULL;
        if (b && b->vcpu != a->vcpu)
            b = NULL; /* a's vCPU's last: 0 from there */
        if (b && (b->ts == a->ts || b->steal_ns < a->steal_ns))
            continue; /* no interval to tell (a hostile or clock-stepped recording) */
        double pct = 0;
        if (b) {
            double ns = (double)(b->ts - a->ts) * 1e9 / (double)tps;
            pct = 100.0 * (double)(b->steal_ns - a->steal_ns) / ns;
            pct = pct > 100.0 ? 100.0 : pct; /* two clocks read apart: a little over at most */
        }
        char name[40];
        snprintf(name, sizeof(name), "vcpu %u steal", a->vcpu);
        struct fxt_arg arg = {.type = FXT_ARG_DOUBLE, .v.f64 = pct};
        struct fxt_event ev = {
            .type = FXT_EV_COUNTER,
            .ts = a->ts,
            .thread = {.index = 0, .pid = HVFXT_KOID_VM, .tid = hvfxt_koid_vcpu(a->vcpu)},
            .category = t->category,
            .extra = a->vcpu,
            .args = &arg,
            .nargs = 1};
        ev.name = str(t, name, &rc);
        arg.name = str(t, "percent", &rc);
        if (rc == 0 &&
            emit(t, t->buf, fxt_enc_event(t->buf, FXT_MAX_RECORD_WORDS, &ev), "steal counter") < 0)
            rc = -1;
    }
    free(o);
    return rc;
}

static int cmp_by_vcpu_ts(const void *a, const void *b, void *ctx)
{
    const struct profile *p = ctx;
    const struct prof_sample *x = &p->samples.v[*(const uint32_t *)a];
    const struct prof_sample *y = &p->samples.v[*(const uint32_t *)b];
    if (x->vcpu != y->vcpu)
        return x->vcpu < y->vcpu ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_by_thread_ts(const void *a, const void *b, void *ctx)
{
    const struct profile *p = ctx;
    const struct prof_sample *x = &p->samples.v[*(const uint32_t *)a];
    const struct prof_sample *y = &p->samples.v[*(const uint32_t *)b];
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

struct pair {
    uint64_t a, b;
};

static int cmp_pair(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Distinct (a, b) pairs of the samples, sorted; *n receives the count. */
static struct pair *distinct(const struct profile *p, int which, size_t *n)
{
    struct pair *v = malloc((p->samples.n + 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        v[i] = which == 0   ? (struct pair){s->vcpu, 0}
               : which == 1 ? (struct pair){s->pid, 0}
               : which == 2 ? (struct pair){s->pid, s->tid}
                            : (struct pair){s->pid, s->group};
    }
    if (p->samples.n > 1)
        qsort(v, p->samples.n, sizeof(*v), cmp_pair);
    size_t w = 0;
    for (size_t i = 0; i < p->samples.n; i++) {
        if (!w || cmp_pair(&v[w - 1], &v[i]))
            v[w++] = v[i];
    }
    *n = w;
    return v;
}

static int write_names(struct tl *t, const struct profile *p, const char *vm_name)
{
    if (emit(t, t->buf, fxt_enc_kobj_process(t->buf, FXT_MAX_RECORD_WORDS, HVFXT_KOID_VM, vm_name),
             "VM name") < 0)
        return -1;
    int rc = 0;
    size_t n[4] = {0};
    struct pair *d[4] = {distinct(p, 0, &n[0]), distinct(p, 1, &n[1]), distinct(p, 2, &n[2]),
                         distinct(p, 3, &n[3])};
    if (!d[0] || !d[1] || !d[2] || !d[3]) {
        rc = hv_errk(t->err, HV_ERR_NO_MEMORY, "timeline: out of memory");
        goto out;
    }
    char name[128];
    for (size_t i = 0; i < n[0] && rc == 0; i++) {
        snprintf(name, sizeof(name), "vcpu %u", (unsigned)d[0][i].a);
        rc = emit(t, t->buf,
                  fxt_enc_kobj_thread(t->buf, FXT_MAX_RECORD_WORDS,
                                      hvfxt_koid_vcpu((uint32_t)d[0][i].a), name, HVFXT_KOID_VM),
                  "vCPU name");
    }
    /* Perfetto shows koids next to names: the guest's own ids go into the names, and a
     * process in a container is named after it first, so that a container's processes sort
     * together (docs/containers.md). */
    size_t g = 0;
    for (size_t i = 0; i < n[1] && rc == 0; i++) {
        uint64_t pid = d[1][i].a, shown = profile_shown_pid(p, pid);
        char ct[CONTAINER_ID_MAX + 32] = "";
        for (; g < n[3] && d[3][g].a <= pid; g++) {
            const struct prof_group *grp =
                d[3][g].b && d[3][g].b <= p->groups.n ? &p->groups.v[d[3][g].b - 1] : NULL;
            char id[CONTAINER_ID_MAX + 1];
            if (d[3][g].a == pid && !ct[0] && grp && grp->ct.id[0])
                snprintf(ct, sizeof(ct), "[%s %s] ", container_engine_name(grp->ct.engine),
                         profile_group_container(grp, id, sizeof(id)));
        }
        if (shown != pid)
            snprintf(name, sizeof(name), "%s%s %" PRIu64, ct, profile_process_name(p, pid), shown);
        else
            snprintf(name, sizeof(name), "%s%s", ct, profile_process_name(p, pid));
        rc = emit(t, t->buf, fxt_enc_kobj_process(t->buf, FXT_MAX_RECORD_WORDS, pid, name),
                  "process name");
    }
    for (size_t i = 0; i < n[2] && rc == 0; i++) {
        uint64_t pid = d[2][i].a, tid = d[2][i].b, shown = profile_shown_tid(p, pid, tid);
        if (!tid || tid == pid)
            continue;
        if (shown != tid)
            snprintf(name, sizeof(name), "%s %" PRIu64, profile_thread_name(p, pid, tid), shown);
        else
            snprintf(name, sizeof(name), "%s", profile_thread_name(p, pid, tid));
        rc = emit(t, t->buf, fxt_enc_kobj_thread(t->buf, FXT_MAX_RECORD_WORDS, tid, name, pid),
                  "thread name");
    }
out:
    for (int k = 0; k < 4; k++)
        free(d[k]);
    return rc;
}

int report_write_timeline(const struct profile *p, const struct report_opts *o, FILE *out,
                          struct hv_err *err)
{
    struct tl *t = calloc(1, sizeof(*t));
    uint32_t *order = malloc((p->samples.n + 1) * sizeof(*order));
    struct open_slice *st = calloc(TL_MAX_DEPTH, sizeof(*st));
    int rc = -1;
    if (!t || !order || !st) {
        hv_errk(err, HV_ERR_NO_MEMORY, "timeline: out of memory");
        goto out;
    }
    t->out = out;
    t->err = err;
    if (fxt_intern_init(&t->in, 0x7fff, 255, 4u << 20, err) < 0)
        goto out;
    uint64_t tps = p->ticks_per_sec ? p->ticks_per_sec : 1000000000ull;
    static const char provider[] = "hvprof report";
    if (emit(t, t->buf, fxt_enc_magic(t->buf, 8), "magic") < 0 ||
        emit(t, t->buf, fxt_enc_provider_info(t->buf, 64, 0, provider, sizeof(provider) - 1),
             "provider") < 0 ||
        emit(t, t->buf, fxt_enc_provider_section(t->buf, 8, 0), "section") < 0 ||
        emit(t, t->buf, fxt_enc_init(t->buf, 8, tps), "init") < 0)
        goto destroy;
    rc = 0;
    t->category = str(t, HVFXT_CATEGORY, &rc);
    if (rc < 0 || write_names(t, p, o->title ? o->title : "guest VM") < 0)
        goto fail;

    /* Sampling period in ticks: from the recording, else the smallest gap seen, else 1 ms. */
    uint64_t period = p->period_ns ? (uint64_t)((double)p->period_ns * (double)tps / 1e9) : 0;
    /* On the vCPUs, what ran there: off-CPU records go on their threads' tracks only. */
    size_t nv = 0;
    for (size_t i = 0; i < p->samples.n; i++)
        if (!p->samples.v[i].off_cpu_ns)
            order[nv++] = (uint32_t)i;
    if (nv > 1)
        qsort_r(order, nv, sizeof(*order), cmp_by_vcpu_ts, (void *)p);
    if (!period) {
        for (size_t i = 1; i < nv; i++) {
            const struct prof_sample *a = &p->samples.v[order[i - 1]], *b = &p->samples.v[order[i]];
            if (a->vcpu == b->vcpu && b->ts > a->ts && (!period || b->ts - a->ts < period))
                period = b->ts - a->ts;
        }
        if (!period)
            period = tps / 1000 ? tps / 1000 : 1;
    }

    if (lay_out(t, p, order, nv, period, tps, false, st) < 0 || steal_counters(t, p, tps) < 0)
        goto fail;
    /* Then one track per guest thread (samples of threads the recording could not tell apart,
     * tid 0, stay on the vCPU tracks only). */
    size_t nt = 0;
    for (size_t i = 0; i < p->samples.n; i++)
        if (p->samples.v[i].tid)
            order[nt++] = (uint32_t)i;
    if (nt > 1)
        qsort_r(order, nt, sizeof(*order), cmp_by_thread_ts, (void *)p);
    if (lay_out(t, p, order, nt, period, tps, true, st) < 0)
        goto fail;
    rc = 0;
    goto destroy;
fail:
    rc = -1;
destroy:
    fxt_intern_destroy(&t->in);
out:
    free(t);
    free(order);
    free(st);
    return rc;
}
