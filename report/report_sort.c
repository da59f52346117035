/* `report --sort KEYS`: the table's rows keyed by perf's sort keys. A row's key is one value per
 * key; the per-sample keys (comm, pid, tid, vcpu, cpl, guest) are the sample's, the per-frame
 * ones (dso, sym) a frame's: the leaf's gives the row its self weight, and every distinct key on
 * the stack its children weight (once a sample, however deep recursion puts it there), as
 * perf's --children does. Rows are found by a hash of their key; names are compared, not their
 * pointers, so two threads of one name are one comm row. */
#include "report/report_sort.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"
#include "common/vector.h"
#include "symbolize/demangle.h"

static const char *const key_names[REPORT_SORT_NKEYS] = {
    [REPORT_SORT_COMM] = "comm",     [REPORT_SORT_PID] = "pid",
    [REPORT_SORT_TID] = "tid",       [REPORT_SORT_DSO] = "dso",
    [REPORT_SORT_SYM] = "sym",       [REPORT_SORT_VCPU] = "vcpu",
    [REPORT_SORT_CPL] = "cpl",       [REPORT_SORT_GUEST] = "guest",
    [REPORT_SORT_CGROUP] = "cgroup", [REPORT_SORT_CONTAINER] = "container"};

const char *report_sort_key_list(void)
{
    static char list[128];
    if (!list[0]) {
        size_t n = 0;
        for (int i = 0; i < REPORT_SORT_NKEYS; i++)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", key_names[i]);
    }
    return list;
}

int report_sort_parse(const char *arg, struct report_sort *s, struct hv_err *err)
{
    s->n = 0;
    const char *p = arg;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int k = -1;
        for (int i = 0; i < REPORT_SORT_NKEYS; i++)
            if (strlen(key_names[i]) == len && !strncmp(p, key_names[i], len))
                k = i;
        if (len == 3 && !strncmp(p, "cpu", 3)) /* perf's name: the guest's CPU is a vCPU */
            k = REPORT_SORT_VCPU;
        if (k < 0)
            return hv_errk(err, HV_ERR_USAGE, "--sort %.64s: unknown key '%.*s' (keys: %s)", arg,
                           (int)(len > 32 ? 32 : len), p, report_sort_key_list());
        for (unsigned i = 0; i < s->n; i++)
            if (s->keys[i] == (enum report_sort_key)k)
                return hv_errk(err, HV_ERR_USAGE, "--sort %.64s: '%s' given twice", arg,
                               key_names[k]);
        if (s->n == REPORT_SORT_MAX)
            return hv_errk(err, HV_ERR_USAGE, "--sort %.64s: more than %d keys", arg,
                           REPORT_SORT_MAX);
        s->keys[s->n++] = (enum report_sort_key)k;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

struct row {
    uint64_t k[REPORT_SORT_MAX];
    uint64_t self, total;
    size_t stamp;                    /* the last sample counted in total, + 1 */
    const struct prof_sample *first; /* the sample that made it (its pid and tid to print) */
    bool kernel;                     /* a sym row's frames are the guest kernel's */
};

struct table {
    const struct profile *p;
    const struct report_sort *sort;
    VECTOR_FIELDS(struct row);
    struct hashidx h;
};

/* A string key is the name itself: its pointer, compared by content. */
static bool is_string_key(enum report_sort_key k)
{
    return k == REPORT_SORT_COMM || k == REPORT_SORT_GUEST || k == REPORT_SORT_CGROUP ||
           k == REPORT_SORT_CONTAINER;
}

struct probe {
    const struct table *t;
    const uint64_t *k;
};

static bool row_eq(const void *ctx, uint32_t idx)
{
    const struct probe *pr = ctx;
    const struct row *r = &pr->t->v[idx];
    for (unsigned i = 0; i < pr->t->sort->n; i++) {
        if (is_string_key(pr->t->sort->keys[i])
                ? strcmp((const char *)(uintptr_t)r->k[i], (const char *)(uintptr_t)pr->k[i])
                : r->k[i] != pr->k[i])
            return false;
    }
    return true;
}

static uint64_t key_hash(const struct table *t, const uint64_t *k)
{
    uint64_t h = HASHIDX_SEED;
    for (unsigned i = 0; i < t->sort->n; i++) {
        if (is_string_key(t->sort->keys[i])) {
            const char *s = (const char *)(uintptr_t)k[i];
            h = hashidx_bytes(h, s, strlen(s) + 1);
        } else {
            h = hashidx_u64(h, k[i]);
        }
    }
    return h;
}

/* The row of key k, made if new; NULL without memory. */
static struct row *row_of(struct table *t, const uint64_t *k, const struct prof_sample *s)
{
    uint64_t hv = key_hash(t, k);
    struct probe pr = {t, k};
    uint32_t idx = hashidx_find(&t->h, hv, row_eq, &pr);
    if (idx != HASHIDX_NONE)
        return &t->v[idx];
    struct row *r = vec_push(t);
    if (!r)
        return NULL;
    *r = (struct row){.first = s};
    memcpy(r->k, k, sizeof(r->k));
    if (hashidx_insert(&t->h, hv, (uint32_t)(t->n - 1)) < 0) {
        t->n--;
        return NULL;
    }
    return r;
}

static const char *guest_name(const struct profile *p)
{
    return p->header.guest[0] ? p->header.guest : "guest";
}

/* The sample's key with the frame's parts (frame NULL: a sample with no frame). */
static void make_key(const struct table *t, const struct prof_sample *s,
                     const struct prof_frame *fr, uint64_t *k)
{
    const struct profile *p = t->p;
    memset(k, 0, sizeof(uint64_t) * REPORT_SORT_MAX);
    uint32_t func = fr && fr->loc < p->locs.n ? p->locs.v[fr->loc].func : PROF_NONE;
    for (unsigned i = 0; i < t->sort->n; i++) {
        switch (t->sort->keys[i]) {
        case REPORT_SORT_COMM:
            k[i] = (uintptr_t)profile_thread_name(p, s->pid, s->tid);
            break;
        case REPORT_SORT_PID:
            k[i] = profile_process_row(p, s->pid);
            break;
        case REPORT_SORT_TID:
            k[i] = s->tid ^ (s->pid << 32);
            break;
        case REPORT_SORT_DSO:
            k[i] = func == PROF_NONE ? PROF_NONE : p->funcs.v[func].module;
            break;
        case REPORT_SORT_SYM:
            k[i] = func;
            break;
        case REPORT_SORT_VCPU:
            k[i] = s->vcpu;
            break;
        case REPORT_SORT_CPL:
            k[i] = s->cpl;
            break;
        case REPORT_SORT_GUEST:
            k[i] = (uintptr_t)guest_name(p);
            break;
        case REPORT_SORT_CGROUP: {
            const struct prof_group *g = profile_sample_group(p, s);
            k[i] = (uintptr_t)(g ? g->path : "[no cgroup]");
            break;
        }
        case REPORT_SORT_CONTAINER: {
            /* The full id or name: the cell shows it as the engines list it. */
            const struct prof_group *g = profile_sample_group(p, s);
            k[i] = (uintptr_t)(g && g->ct.id[0] ? g->ct.id : "-");
            break;
        }
        default:
            break;
        }
    }
}

static bool per_frame(const struct report_sort *s)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->keys[i] == REPORT_SORT_DSO || s->keys[i] == REPORT_SORT_SYM)
            return true;
    return false;
}

static int fill(struct table *t)
{
    const struct profile *p = t->p;
    bool frames = per_frame(t->sort);
    uint64_t k[REPORT_SORT_MAX];
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        uint32_t n = frames ? s->nframes : 0;
        if (n == 0) {
            make_key(t, s, NULL, k);
            struct row *r = row_of(t, k, s);
            if (!r)
                return -1;
            r->self += s->weight;
            r->total += s->weight;
            continue;
        }
        for (uint32_t f = 0; f < n; f++) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            make_key(t, s, fr, k);
            struct row *r = row_of(t, k, s);
            if (!r)
                return -1;
            if (f == 0)
                r->self += s->weight;
            if (r->stamp != i + 1) {
                r->stamp = i + 1;
                r->total += s->weight;
                r->kernel = (fr->flags & PROF_FRAME_KERNEL) != 0;
            }
        }
    }
    return 0;
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
    const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
    bool by_self = *(const bool *)ctx;
    uint64_t xa = by_self ? x->self : x->total, ya = by_self ? y->self : y->total;
    uint64_t xb = by_self ? x->total : x->self, yb = by_self ? y->total : y->self;
    if (xa != ya)
        return xa > ya ? -1 : 1;
    if (xb != yb)
        return xb > yb ? -1 : 1;
    return memcmp(x->k, y->k, sizeof(x->k));
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A column's header, its printf width (negative: left-aligned) and its cell. */
static const char *column_title(enum report_sort_key k)
{
    static const char *const titles[REPORT_SORT_NKEYS] = {
        [REPORT_SORT_COMM] = "Command",    [REPORT_SORT_PID] = "Pid:Command",
        [REPORT_SORT_TID] = "Tid:Command", [REPORT_SORT_DSO] = "Shared Object",
        [REPORT_SORT_SYM] = "Symbol",      [REPORT_SORT_VCPU] = "vCPU",
        [REPORT_SORT_CPL] = "Mode",        [REPORT_SORT_GUEST] = "Guest",
        [REPORT_SORT_CGROUP] = "Cgroup",   [REPORT_SORT_CONTAINER] = "Container"};
    return (unsigned)k < REPORT_SORT_NKEYS ? titles[k] : "?";
}

static int column_width(enum report_sort_key k)
{
    switch (k) {
    case REPORT_SORT_COMM:
        return -16;
    case REPORT_SORT_PID:
    case REPORT_SORT_TID:
        return -22;
    case REPORT_SORT_DSO:
        return -24;
    case REPORT_SORT_VCPU:
        return 4;
    case REPORT_SORT_CPL:
        return -6;
    case REPORT_SORT_GUEST:
        return -20;
    case REPORT_SORT_CGROUP:
        return -40;
    case REPORT_SORT_CONTAINER:
        return -14;
    default:
        return 0;
    }
}

static void cell(const struct profile *p, const struct row *r, unsigned i, enum report_sort_key k,
                 bool last, FILE *out)
{
    char buf[320];
    const char *text = buf;
    switch (k) {
    case REPORT_SORT_COMM:
    case REPORT_SORT_GUEST:
    case REPORT_SORT_CGROUP:
        text = (const char *)(uintptr_t)r->k[i];
        break;
    case REPORT_SORT_CONTAINER: {
        const struct prof_group *g = profile_sample_group(p, r->first);
        text = g && g->ct.id[0] ? profile_group_container(g, buf, sizeof(buf)) : "-";
        break;
    }
    case REPORT_SORT_PID:
        snprintf(buf, sizeof(buf), "%" PRIu64 ":%s", profile_shown_pid(p, r->k[i]),
                 profile_process_name(p, r->k[i]));
        break;
    case REPORT_SORT_TID:
        snprintf(buf, sizeof(buf), "%" PRIu64 ":%s",
                 profile_shown_tid(p, r->first->pid, r->first->tid),
                 profile_thread_name(p, r->first->pid, r->first->tid));
        break;
    case REPORT_SORT_DSO:
        text = r->k[i] == PROF_NONE ? "[unknown]" : profile_module_basename(p, (uint32_t)r->k[i]);
        break;
    case REPORT_SORT_SYM:
        text = r->k[i] == PROF_NONE ? "[unknown]" : p->funcs.v[r->k[i]].name;
        /* Without the parameter list: the table's column is the function's name. */
        snprintf(buf, sizeof(buf), "[%c] %.*s", r->kernel ? 'k' : '.',
                 (int)hv_demangled_short_len(text), text);
        text = buf;
        break;
    case REPORT_SORT_VCPU:
        snprintf(buf, sizeof(buf), "%" PRIu64, r->k[i]);
        break;
    case REPORT_SORT_CPL:
        text = r->k[i] == PROF_CPL_KERNEL ? "kernel" : "user";
        break;
    default:
        text = "?";
    }
    int w = column_width(k);
    if (last && w < 0)
        fprintf(out, " %s", text);
    else
        fprintf(out, " %*s", w, text);
}

int report_sort_write(const struct profile *p, const struct report_sort_opts *o, FILE *out,
                      struct hv_err *err)
{
    static const struct report_sort dso_sym = {{REPORT_SORT_DSO, REPORT_SORT_SYM}, 2};
    struct table t = {.p = p, .sort = o->sort.n ? &o->sort : &dso_sym};
    hashidx_init(&t.h);
    struct row **order = NULL;
    int rc = -1;
    if (fill(&t) < 0 || !(order = malloc((t.n ? t.n : 1) * sizeof(*order))))
        goto oom;
    for (size_t i = 0; i < t.n; i++)
        order[i] = &t.v[i];
    bool by_self = o->no_children;
    if (t.n > 1)
        qsort_r(order, t.n, sizeof(*order), cmp_rows, &by_self);
    uint64_t total = profile_total_weight(p);
    const char *unit = p->weight_us ? "Time(us)" : "Samples";
    /* The header: perf's column names, its "Overhead" when there is one share column. */
    if (o->no_children)
        fprintf(out, "# %8s %10s ", "Overhead", unit);
    else
        fprintf(out, "# %8s %8s %10s ", "Children", "Self", unit);
    for (unsigned i = 0; i < t.sort->n; i++) {
        int w = column_width(t.sort->keys[i]);
        if (i + 1 == t.sort->n && w < 0)
            fprintf(out, " %s", column_title(t.sort->keys[i]));
        else
            fprintf(out, " %*s", w, column_title(t.sort->keys[i]));
    }
    fputc('\n', out);
    unsigned limit = o->limit ? o->limit : 50;
    size_t shown = 0, under = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct row *r = order[i];
        uint64_t key = o->no_children ? r->self : r->total;
        if (!key)
            break;
        if (o->percent_limit > 0 && pct(key, total) < o->percent_limit) {
            under++;
            continue;
        }
        if (shown == limit)
            continue;
        shown++;
        if (o->no_children)
            fprintf(out, "  %7.2f%% %10" PRIu64 " ", pct(r->self, total), r->self);
        else
            fprintf(out, "  %7.2f%% %7.2f%% %10" PRIu64 " ", pct(r->total, total),
                    pct(r->self, total), r->self);
        for (unsigned k = 0; k < t.sort->n; k++)
            cell(p, r, k, t.sort->keys[k], k + 1 == t.sort->n, out);
        fputc('\n', out);
    }
    if (under)
        fprintf(out, "# %zu rows under %.2f%% left out (--percent-limit)\n", under,
                o->percent_limit);
    rc = 0;
    goto done;
oom:
    hv_errk(err, HV_ERR_NO_MEMORY, "top: out of memory");
done:
    free(order);
    vec_free(&t);
    hashidx_free(&t.h);
    return rc;
}
