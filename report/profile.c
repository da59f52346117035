#include "report/profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/files.h"
#include "report/profile_priv.h"
#include "schema/schema.h"
#include "common/hashidx.h"

void profile_init(struct profile *p)
{
    memset(p, 0, sizeof(*p));
    p->ticks_per_sec = 1000000000ull;
}

void profile_free(struct profile *p)
{
    for (size_t i = 0; i < p->modules.n; i++) {
        sym_source_free(&p->modules.v[i].src);
        free(p->modules.v[i].name);
    }
    for (size_t i = 0; i < p->names.n; i++) {
        free(p->names.v[i].name);
        free(p->names.v[i].hostname);
    }
    prof_groups_free(p);
    for (size_t i = 0; i < p->funcs.n; i++) {
        free(p->funcs.v[i].name);
        free(p->funcs.v[i].file);
    }
    free(p->samples.v);
    free(p->frames.v);
    free(p->modules.v);
    free(p->mappings.v);
    free(p->names.v);
    if (p->name_index) {
        hashidx_free(p->name_index);
        free(p->name_index);
    }
    free(p->locs.v);
    free(p->funcs.v);
    free(p->inl.v);
    free(p->steal.v);
    prof_symbolize_index_free(p);
    prof_maps_index_free(p);
    prof_aggregate_free(p);
    for (unsigned i = 0; i < HVFXT_RUNTIME_MAX; i++)
        if (p->runtime[i].free)
            p->runtime[i].free(p->runtime[i].data);
    memset(p, 0, sizeof(*p));
}

static int add_frames(struct profile *p, const uint64_t *addrs, const uint32_t *flags, uint32_t n,
                      uint32_t default_flags_first, uint32_t default_flags_rest, struct hv_err *err)
{
    if (p->frames.n + n > UINT32_MAX - 1)
        return hv_errk(err, HV_ERR_LIMIT, "profile: too many frames");
    for (uint32_t i = 0; i < n; i++) {
        if (PROF_VEC_RESERVE(p->frames, err) < 0)
            return -1;
        uint32_t fl = flags ? flags[i] : i == 0 ? default_flags_first : default_flags_rest;
        p->frames.v[p->frames.n++] = (struct prof_frame){addrs[i], PROF_NONE, fl};
    }
    return 0;
}

int profile_add_sample(struct profile *p, const struct prof_sample_in *in, struct hv_err *err)
{
    uint64_t hash = 0;
    if (p->aggregate) {
        int at = prof_aggregate_find(p, in, &hash);
        if (at >= 0) {
            struct prof_sample *s = &p->samples.v[at];
            s->weight += in->weight;
            s->off_cpu_ns += in->off_cpu_ns;
            s->exit_ns += in->exit_ns;
            s->ts = in->ts < s->ts ? in->ts : s->ts;
            s->ts_last = in->ts > s->ts_last ? in->ts : s->ts_last;
            return at;
        }
    }
    if (p->samples.n >= UINT32_MAX - 1)
        return hv_errk(err, HV_ERR_LIMIT, "profile: too many samples");
    if (PROF_VEC_RESERVE(p->samples, err) < 0)
        return -1;
    uint32_t k = in->cpl == PROF_CPL_KERNEL ? PROF_FRAME_KERNEL : 0;
    /* A stack the process had before is shared, not copied (profile_aggregate.c). */
    uint64_t stack_hash;
    int same = prof_stack_find(p, in, &stack_hash);
    uint32_t first = same >= 0 ? p->samples.v[same].first : (uint32_t)p->frames.n;
    if (same < 0 && (add_frames(p, in->addrs, in->flags, in->n, k, k | PROF_FRAME_RA, err) < 0 ||
                     prof_stack_insert(p, stack_hash, (uint32_t)p->samples.n, err) < 0))
        return -1;
    p->samples.v[p->samples.n] = (struct prof_sample){.ts = in->ts,
                                                      .ts_last = in->ts,
                                                      .pid = in->pid,
                                                      .tid = in->tid,
                                                      .weight = in->weight,
                                                      .vcpu = in->vcpu,
                                                      .cpl = in->cpl,
                                                      .first = first,
                                                      .nframes = in->n,
                                                      .off_cpu_ns = in->off_cpu_ns,
                                                      .exit_ns = in->exit_ns,
                                                      .group = in->group};
    if (p->aggregate && prof_aggregate_insert(p, hash, (uint32_t)p->samples.n, err) < 0)
        return -1;
    return (int)p->samples.n++;
}

/* A copy of a name from a recording or a symbol file with its control characters (C0, DEL)
 * shown as '?': a hostile guest's names must not drive the terminal a report is printed on. */
char *prof_dup_printable(const char *name)
{
    char *c = strdup(name);
    for (char *q = c; q && *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            *q = '?';
    return c;
}

struct name_key {
    const struct profile *p;
    uint64_t pid, tid;
};

static bool name_eq(const void *ctx, uint32_t idx)
{
    const struct name_key *k = ctx;
    return k->p->names.v[idx].pid == k->pid && k->p->names.v[idx].tid == k->tid;
}

static uint64_t name_hash(uint64_t pid, uint64_t tid)
{
    return hashidx_u64(hashidx_u64(HASHIDX_SEED, pid), tid);
}

static struct prof_name *find_name(const struct profile *p, uint64_t pid, uint64_t tid)
{
    if (!p->name_index)
        return NULL;
    struct name_key k = {p, pid, tid};
    uint32_t i = hashidx_find(p->name_index, name_hash(pid, tid), name_eq, &k);
    return i == HASHIDX_NONE ? NULL : &p->names.v[i];
}

const struct prof_name *profile_name_of(const struct profile *p, uint64_t pid, uint64_t tid)
{
    return find_name(p, pid, tid);
}

int profile_set_ns(struct profile *p, uint64_t pid, uint64_t tid, int64_t ns_tid, int64_t ns_pid,
                   uint64_t pid_ns, const char *hostname, struct hv_err *err)
{
    struct prof_name *t = find_name(p, pid, tid), *proc = find_name(p, pid, 0);
    if (t) {
        t->ns_id = ns_tid;
        t->pid_ns = pid_ns;
        free(t->hostname);
        t->hostname = NULL;
        if (hostname && hostname[0] && !(t->hostname = prof_dup_printable(hostname)))
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    }
    if (proc) {
        proc->ns_id = ns_pid;
        proc->pid_ns = pid_ns;
    }
    return 0;
}

int profile_set_name(struct profile *p, uint64_t pid, uint64_t tid, const char *name,
                     int64_t guest_id, struct hv_err *err)
{
    if (!p->name_index) {
        p->name_index = calloc(1, sizeof(struct hashidx));
        if (!p->name_index)
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
        hashidx_init(p->name_index);
    }
    char *copy = prof_dup_printable(name ? name : "");
    if (!copy)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    if (guest_id >= 0)
        p->guest_ids = true;
    struct prof_name *n = find_name(p, pid, tid);
    if (n) {
        free(n->name);
        n->name = copy;
        if (guest_id >= 0)
            n->guest_id = guest_id;
        return 0;
    }
    if (PROF_VEC_RESERVE(p->names, err) < 0 ||
        hashidx_insert(p->name_index, name_hash(pid, tid), (uint32_t)p->names.n) < 0) {
        free(copy);
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    }
    p->names.v[p->names.n++] = (struct prof_name){pid, tid, copy, guest_id, 0, -1, 0, NULL};
    return 0;
}

const char *profile_process_name(const struct profile *p, uint64_t pid)
{
    const struct prof_name *n = find_name(p, pid, 0);
    return n && n->name[0] ? n->name : "[unknown]";
}

const char *profile_thread_name(const struct profile *p, uint64_t pid, uint64_t tid)
{
    const struct prof_name *n = find_name(p, pid, tid);
    return n && n->name[0] ? n->name : profile_process_name(p, pid);
}

/* Without the guest's own ids (a guest whose OS hvprof does not read), the recording's
 * address-space and thread numbers: koid minus its base (docs/fxt-samples.md section 4), which
 * `--pid` and `--tid` take back. With them, an unlabelled one keeps its koid, so that it cannot
 * be taken for a guest pid. */
uint64_t profile_shown_pid(const struct profile *p, uint64_t pid)
{
    const struct prof_name *n = find_name(p, pid, 0);
    if (n && n->guest_id >= 0)
        return (uint64_t)n->guest_id;
    return !p->guest_ids && pid >= HVFXT_KOID_PROCESS_BASE && pid < HVFXT_KOID_THREAD_BASE
               ? pid - HVFXT_KOID_PROCESS_BASE
               : pid;
}

uint64_t profile_shown_tid(const struct profile *p, uint64_t pid, uint64_t tid)
{
    const struct prof_name *n = find_name(p, pid, tid);
    if (n && n->guest_id >= 0)
        return (uint64_t)n->guest_id;
    return !p->guest_ids && tid >= HVFXT_KOID_THREAD_BASE ? tid - HVFXT_KOID_THREAD_BASE : tid;
}

static int by_guest_process(const void *a, const void *b)
{
    const struct prof_name *x = *(const struct prof_name *const *)a,
                           *y = *(const struct prof_name *const *)b;
    if (x->guest_id != y->guest_id)
        return x->guest_id < y->guest_id ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int profile_link_processes(struct profile *p, struct hv_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < p->names.n; i++)
        n += p->names.v[i].tid == 0 && p->names.v[i].guest_id >= 0;
    if (n < 2)
        return 0;
    struct prof_name **v = malloc(n * sizeof(*v));
    if (!v)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    n = 0;
    for (size_t i = 0; i < p->names.n; i++)
        if (p->names.v[i].tid == 0 && p->names.v[i].guest_id >= 0)
            v[n++] = &p->names.v[i];
    qsort(v, n, sizeof(*v), by_guest_process);
    for (size_t i = 1; i < n; i++)
        if (v[i]->guest_id == v[i - 1]->guest_id && !strcmp(v[i]->name, v[i - 1]->name))
            v[i]->row = v[i - 1]->row ? v[i - 1]->row : v[i - 1]->pid;
    free(v);
    return 0;
}

uint64_t profile_process_row(const struct profile *p, uint64_t pid)
{
    const struct prof_name *n = find_name(p, pid, 0);
    return n && n->row ? n->row : pid;
}

const char *profile_module_basename(const struct profile *p, uint32_t module)
{
    if (module >= p->modules.n)
        return "[unknown]";
    return prof_base_name(p->modules.v[module].name);
}

bool profile_time_span(const struct profile *p, uint64_t *first, uint64_t *last)
{
    *first = UINT64_MAX;
    *last = 0;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        uint64_t l = s->ts_last > s->ts ? s->ts_last : s->ts;
        *first = s->ts < *first ? s->ts : *first;
        *last = l > *last ? l : *last;
    }
    return p->samples.n > 0;
}

uint64_t profile_total_weight(const struct profile *p)
{
    uint64_t t = 0;
    for (size_t i = 0; i < p->samples.n; i++)
        t += p->samples.v[i].weight;
    return t;
}

/* The recorder names address spaces it knows nothing about "as<n> cr3=0x..." (sampler/); a main
 * module is a better name than that. */
static bool synthetic_process_name(const char *name)
{
    unsigned n;
    char c;
    return sscanf(name, "as%u cr3=0x%c", &n, &c) == 2;
}

void profile_name_processes_from_modules(struct profile *p)
{
    for (size_t s = 0; s < p->samples.n; s++) {
        uint64_t pid = p->samples.v[s].pid;
        const struct prof_name *known = find_name(p, pid, 0);
        if (known && !synthetic_process_name(known->name))
            continue;
        const struct prof_mapping *best = NULL;
        size_t nm;
        const uint32_t *ids = prof_mappings_of(p, pid, &nm); /* in order of start */
        for (size_t i = 0; i < nm && !best; i++)
            if (!p->modules.v[p->mappings.v[ids[i]].module].kernel)
                best = &p->mappings.v[ids[i]];
        char buf[64];
        const char *name = buf;
        if (known && (!best || hvfxt_module_name_is_placeholder(p->modules.v[best->module].name)))
            continue; /* the recorded name, synthetic or not, beats a placeholder */
        if (best)
            name = prof_base_name(p->modules.v[best->module].name);
        else if (p->samples.v[s].cpl == PROF_CPL_KERNEL && pid == 0)
            name = "[kernel]";
        else
            snprintf(buf, sizeof(buf), "pid %" PRIu64, profile_shown_pid(p, pid));
        if (profile_set_name(p, pid, 0, name, -1, NULL) < 0)
            return;
    }
}
