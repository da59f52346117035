/* The report's filters (--vcpu, --pid, --tid, --comm, --cgroup, --container, --user, --kernel,
 * --time), as perf's: a
 * list keeps a sample that matches any of its entries, the kinds add up. And when they keep
 * nothing, which one did it and what the recording holds instead, so that an empty report is
 * never a silent one. */
#include "report/profile.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "report/profile_priv.h"
#include "schema/schema.h"

/* The kernel keeps a task's name in 16 bytes with its NUL (TASK_COMM_LEN, include/linux/sched.h):
 * `--comm my_long_program_name` matches the guest's "my_long_program", as in perf. */
#define TASK_COMM_CHARS 15

static bool name_matches(const char *name, const char *want)
{
    if (!strcmp(name, want))
        return true;
    if (strpbrk(want, "*?[") && fnmatch(want, name, 0) == 0)
        return true;
    size_t n = strlen(name);
    return n == TASK_COMM_CHARS && strlen(want) > n && !strncmp(name, want, n);
}

static bool comm_matches(const struct profile *p, const struct prof_sample *s,
                         const struct prof_filter *f)
{
    const char *thread = profile_thread_name(p, s->pid, s->tid);
    const char *process = profile_process_name(p, s->pid);
    for (size_t i = 0; i < f->ncomms; i++)
        if (name_matches(thread, f->comms[i]) || name_matches(process, f->comms[i]))
            return true;
    return false;
}

static bool cgroup_matches(const struct profile *p, const struct prof_sample *s,
                           const struct prof_filter *f)
{
    const struct prof_group *g = profile_sample_group(p, s);
    for (size_t i = 0; g && i < f->ncgroups; i++)
        if (!strcmp(g->path, f->cgroups[i]) || fnmatch(f->cgroups[i], g->path, 0) == 0)
            return true;
    return false;
}

/* An id's prefix (at least one hex digit, as `docker ps` and `podman ps` take them) or the
 * whole name of an engine that names its containers. */
static bool container_matches(const struct profile *p, const struct prof_sample *s,
                              const struct prof_filter *f)
{
    const struct prof_group *g = profile_sample_group(p, s);
    if (!g || !g->ct.id[0])
        return false;
    for (size_t i = 0; i < f->ncontainers; i++) {
        size_t n = strlen(f->containers[i]);
        if (n && !strncmp(g->ct.id, f->containers[i], n))
            return true;
    }
    return false;
}

/* The ids the filter names, as the recording's koids where it has no guest ids. */
struct wanted {
    uint64_t pids[PROF_FILTER_MAX], tids[PROF_FILTER_MAX];
    uint64_t lo, hi; /* the window in ticks, [lo, hi) */
};

static void wanted_of(const struct profile *p, const struct prof_filter *f, struct wanted *w)
{
    for (size_t i = 0; i < f->npids; i++)
        w->pids[i] = !p->guest_ids && f->pids[i] < HVFXT_KOID_PROCESS_BASE
                         ? f->pids[i] + HVFXT_KOID_PROCESS_BASE
                         : f->pids[i];
    for (size_t i = 0; i < f->ntids; i++)
        w->tids[i] = !p->guest_ids && f->tids[i] < HVFXT_KOID_THREAD_BASE
                         ? f->tids[i] + HVFXT_KOID_THREAD_BASE
                         : f->tids[i];
    uint64_t origin = 0;
    w->lo = 0;
    w->hi = UINT64_MAX;
    if (f->has_time && !f->time_absolute) {
        origin = p->start_ts;
        for (size_t r = 0; !origin && r < p->samples.n; r++)
            origin = p->samples.v[r].ts; /* no marker: the first sample */
    }
    double tps = p->ticks_per_sec ? (double)p->ticks_per_sec : 1e9;
    if (f->has_time && f->time_from >= 0)
        w->lo = origin + (uint64_t)(f->time_from * tps);
    if (f->has_time && f->time_to >= 0)
        w->hi = origin + (uint64_t)(f->time_to * tps);
}

enum kind { K_VCPU, K_PID, K_TID, K_COMM, K_CGROUP, K_CONTAINER, K_CPL, K_TIME, K_N };

static bool passes(const struct profile *p, const struct prof_sample *s,
                   const struct prof_filter *f, const struct wanted *w, enum kind k)
{
    switch (k) {
    case K_VCPU:
        for (size_t i = 0; i < f->nvcpus; i++)
            if (s->vcpu == f->vcpus[i])
                return true;
        return !f->nvcpus;
    case K_PID:
        for (size_t i = 0; i < f->npids; i++)
            if (s->pid == w->pids[i] || profile_shown_pid(p, s->pid) == w->pids[i])
                return true;
        return !f->npids;
    case K_TID:
        for (size_t i = 0; i < f->ntids; i++)
            if (s->tid == w->tids[i] || profile_shown_tid(p, s->pid, s->tid) == w->tids[i])
                return true;
        return !f->ntids;
    case K_COMM:
        return !f->ncomms || comm_matches(p, s, f);
    case K_CGROUP:
        return !f->ncgroups || cgroup_matches(p, s, f);
    case K_CONTAINER:
        return !f->ncontainers || container_matches(p, s, f);
    case K_CPL:
        return !(f->user_only && s->cpl == PROF_CPL_KERNEL) &&
               !(f->kernel_only && s->cpl != PROF_CPL_KERNEL);
    case K_TIME:
        return s->ts >= w->lo && s->ts < w->hi;
    default:
        return true;
    }
}

bool profile_filter_active(const struct prof_filter *f)
{
    return f->nvcpus || f->npids || f->ntids || f->ncomms || f->ncgroups || f->ncontainers ||
           f->user_only || f->kernel_only || f->has_time;
}

void profile_filter(struct profile *p, const struct prof_filter *f)
{
    /* --comm matches the names the report prints: a process the recorder only knew by its
     * address space is named after its program before the filter, not after it. */
    if (f->ncomms)
        profile_name_processes_from_modules(p);
    struct wanted w;
    wanted_of(p, f, &w);
    size_t keep = 0;
    for (size_t r = 0; r < p->samples.n; r++) {
        const struct prof_sample *s = &p->samples.v[r];
        bool ok = true;
        for (enum kind k = 0; k < K_N && ok; k++)
            ok = passes(p, s, f, &w, k);
        if (ok)
            p->samples.v[keep++] = *s;
    }
    p->samples.n = keep;
    prof_aggregate_free(p); /* they name samples by index */
}

/* Up to six of the recording's names: those that contain `want` (ignoring case), else any. */
static void similar_names(const struct profile *p, const char *want, char *buf, size_t len)
{
    size_t used = 0, shown = 0;
    buf[0] = 0;
    for (int pass = 0; pass < 2 && !shown; pass++)
        for (size_t i = 0; i < p->names.n && shown < 6; i++) {
            const char *n = p->names.v[i].name;
            if (!n || (pass == 0 && !strcasestr(n, want)))
                continue;
            bool dup = false; /* a process and its main thread share the name */
            for (size_t j = 0; j < i && !dup; j++)
                dup = p->names.v[j].name && !strcmp(p->names.v[j].name, n);
            if (dup)
                continue;
            int k = snprintf(buf + used, len - used, "%s%s", shown ? ", " : "", n);
            if (k < 0 || (size_t)k >= len - used) {
                buf[used] = 0;
                return;
            }
            used += (size_t)k;
            shown++;
        }
}

/* Up to four of the recording's cgroup paths, or its containers' ids. */
static void similar_groups(const struct profile *p, bool paths, char *buf, size_t len)
{
    size_t used = 0, shown = 0;
    buf[0] = 0;
    for (size_t i = 0; i < p->groups.n && shown < 4; i++) {
        char id[CONTAINER_ID_MAX + 1];
        const char *v =
            paths ? p->groups.v[i].path : profile_group_container(&p->groups.v[i], id, sizeof(id));
        if (!v[0] || strstr(buf, v))
            continue;
        int k = snprintf(buf + used, len - used, "%s%s", shown ? ", " : "", v);
        if (k < 0 || (size_t)k >= len - used) {
            buf[used] = 0;
            return;
        }
        used += (size_t)k;
        shown++;
    }
}

/* The samples' first and last time, in seconds from the recording's start. */
static void span(const struct profile *p, double *from, double *to)
{
    uint64_t lo, hi;
    profile_time_span(p, &lo, &hi);
    uint64_t origin = p->start_ts ? p->start_ts : lo;
    double tps = p->ticks_per_sec ? (double)p->ticks_per_sec : 1e9;
    *from = lo != UINT64_MAX && lo >= origin ? (double)(lo - origin) / tps : 0;
    *to = hi >= origin ? (double)(hi - origin) / tps : 0;
}

void profile_filter_explain(struct profile *p, const struct prof_filter *f, char *buf, size_t len)
{
    if (!p->samples.n) {
        snprintf(buf, len, "the recording holds no samples");
        return;
    }
    if (f->ncomms)
        profile_name_processes_from_modules(p);
    struct wanted w;
    wanted_of(p, f, &w);
    uint64_t alone[K_N] = {0};
    for (size_t r = 0; r < p->samples.n; r++)
        for (enum kind k = 0; k < K_N; k++)
            alone[k] += passes(p, &p->samples.v[r], f, &w, k);
    double from, to;
    span(p, &from, &to);
    char names[256];
    if (!alone[K_COMM]) {
        similar_names(p, f->comms[0], names, sizeof(names));
        snprintf(buf, len,
                 "--comm %s%s: no thread or process of the recording is named so%s%s (a glob "
                 "such as 'name*' matches a prefix)",
                 f->comms[0], f->ncomms > 1 ? ",..." : "", names[0] ? "; its names: " : "", names);
    } else if (!alone[K_CGROUP] || !alone[K_CONTAINER]) {
        bool cg = !alone[K_CGROUP];
        char seen[256];
        similar_groups(p, cg, seen, sizeof(seen));
        snprintf(buf, len, "%s %s%s: no sample %s%s%s", cg ? "--cgroup" : "--container",
                 cg ? f->cgroups[0] : f->containers[0],
                 (cg ? f->ncgroups : f->ncontainers) > 1 ? ",..." : "",
                 cg ? "in such a cgroup" : "of such a container",
                 seen[0]
                     ? (cg ? "; the recording's cgroups: " : "; the recording's containers: ")
                     : (p->groups.n ? "" : " (the recording has no cgroups: docs/containers.md)"),
                 seen);
    } else if (!alone[K_PID]) {
        snprintf(buf, len,
                 "--pid %" PRIu64 "%s: no sample of that process (the report's Per process table "
                 "lists the recording's pids)",
                 f->pids[0], f->npids > 1 ? ",..." : "");
    } else if (!alone[K_TID]) {
        snprintf(buf, len, "--tid %" PRIu64 "%s: no sample of that thread", f->tids[0],
                 f->ntids > 1 ? ",..." : "");
    } else if (!alone[K_VCPU]) {
        uint32_t maxv = 0;
        for (size_t r = 0; r < p->samples.n; r++)
            maxv = p->samples.v[r].vcpu > maxv ? p->samples.v[r].vcpu : maxv;
        snprintf(buf, len,
                 "--vcpu %" PRIu32 "%s: no sample of that vCPU (the recording's are 0-%u)",
                 f->vcpus[0], f->nvcpus > 1 ? ",..." : "", maxv);
    } else if (!alone[K_CPL]) {
        snprintf(buf, len, "%s: the recording holds no %s samples",
                 f->user_only ? "--user" : "--kernel", f->user_only ? "user-mode" : "kernel");
    } else if (!alone[K_TIME]) {
        snprintf(buf, len,
                 "--time: the window holds no sample; the recording's samples span %.3f to "
                 "%.3f s from its start",
                 from, to);
    } else {
        snprintf(buf, len,
                 "each filter keeps samples, but no sample passes all of them (the recording's "
                 "samples span %.3f to %.3f s)",
                 from, to);
    }
}
