/* Identities that follow the guest's lifecycle (docs/identities.md), on the drain thread.
 *
 * Every RECLAIM_SWEEP_NS the drain thread asks which of the exit core's identities are gone:
 * - where the guest kernel's task list can be read (the OS layer's threads op) and an identity
 *   carries the guest's own pid or tid, the list says: one missing from two lists in a row,
 *   and older than the first of them, has ended (two, because a list read while the guest runs
 *   may miss a task that moves);
 * - anything else (a guest the OS layer cannot list, a stop whose task could not be read, the
 *   boot's contexts) ages: when a table is more than half full, those not sampled for
 *   RECLAIM_AGE_NS go, the longest unsampled first, until it is half full again.
 * The threads of an ended process end with it. Each ended identity gets its record in the
 * trace (HVFXT_IDENTITY_ENDED) and every source's process_ended / thread_ended; its slot is
 * given back (the next incarnation's generation: a new koid) once the exit core's grace is over
 * (sampler/exit/grace.h), with what the sources retired meanwhile. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/exit/grace.h"
#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"
#include "schema/recording.h"

#define RECLAIM_SWEEP_NS     250000000ull /* 250 ms; longer while a sweep costs more than 5 % */
#define RECLAIM_SWEEP_MAX_NS 4000000000ull
#define RECLAIM_AGE_NS       200000000ull /* 200 ms unsampled before an identity may age out */
#define RECLAIM_MISSES       2u           /* task lists in a row without it */
#define RECLAIM_LIST_MAX     262144       /* guest threads one sweep lists at most */
#define RECLAIM_RECENT       1024u        /* ended process keys kept to see one come back */

struct retired {
    void *ptr;
    void (*free_fn)(void *);
};

struct retired_list {
    struct retired *v;
    size_t n, cap;
};

struct age_cand {
    uint64_t ts;
    uint32_t id;
};

struct sampler_reclaim {
    unsigned nvcpus;
    uint64_t last_sweep_ns, sweep_every_ns;
    uint8_t proc_missed[ID_MAX_PROCS], thread_missed[ID_MAX_THREADS];
    uint8_t proc_listed[ID_MAX_PROCS], thread_listed[ID_MAX_THREADS];
    uint8_t proc_ending[ID_MAX_PROCS];
    /* What ended, waiting for the grace; what was retired since (the next batch's). */
    uint32_t batch_procs[ID_MAX_PROCS], batch_threads[ID_MAX_THREADS];
    size_t nbatch_procs, nbatch_threads;
    struct retired_list batch_retired, retired;
    uint64_t *mark;
    bool waiting;
    struct age_cand cand[ID_MAX_THREADS];
    /* The key words of the processes ended last (a ring): a new identity with one of them is an
     * ended process that was still there (the list missed it, or it aged out while alive). */
    uint64_t recent[RECLAIM_RECENT];
    unsigned nrecent;
    /* for the summary */
    uint64_t ended_procs, ended_threads, by_list, by_age, sweeps, lists_failed, came_back;
};

struct sampler_reclaim *sampler_reclaim_create(unsigned nvcpus)
{
    struct sampler_reclaim *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->nvcpus = nvcpus;
    r->mark = calloc(nvcpus ? nvcpus : 1, sizeof(*r->mark));
    if (!r->mark) {
        free(r);
        return NULL;
    }
    return r;
}

static void free_all(struct retired_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        l->v[i].free_fn(l->v[i].ptr);
    l->n = 0;
}

void sampler_reclaim_destroy(struct sampler_reclaim *r)
{
    if (!r)
        return;
    free_all(&r->batch_retired);
    free_all(&r->retired);
    free(r->batch_retired.v);
    free(r->retired.v);
    free(r->mark);
    free(r);
}

void sampler_reclaim_retire(struct sampler *s, void *ptr, void (*free_fn)(void *))
{
    struct retired_list *l = &s->reclaim->retired;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct retired *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            /* No room to wait in: wait here, for the stops under way now. */
            exit_grace_mark(&s->core, s->reclaim->mark);
            while (!exit_grace_over(&s->core, s->reclaim->mark))
                ;
            free_fn(ptr);
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct retired){ptr, free_fn};
}

/* The grace is over: the batch's slots given back, with the core's own state of each, and
 * what was retired with them freed. */
static void release_batch(struct sampler *s)
{
    struct sampler_reclaim *r = s->reclaim;
    for (size_t i = 0; i < r->nbatch_threads; i++) {
        uint32_t id = r->batch_threads[i];
        id_thread_release(s->core.ids, id);
        s->thread_named[id - 1] = 0;
        s->thread_seq[id - 1] = 0;
        r->thread_missed[id - 1] = 0;
    }
    for (size_t i = 0; i < r->nbatch_procs; i++) {
        uint32_t id = r->batch_procs[i];
        id_proc_release(s->core.ids, id);
        s->proc_named[id - 1] = 0;
        s->proc_seq[id - 1] = 0;
        s->looked[id - 1] = 0;
        r->proc_missed[id - 1] = 0;
    }
    free_all(&r->batch_retired);
    r->nbatch_procs = r->nbatch_threads = 0;
    r->waiting = false;
}

static int on_thread(void *ctx, const struct guestos_thread *t)
{
    struct sampler *s = ctx;
    uint32_t proc = id_proc_find(s->core.ids, t->proc_key);
    if (!proc)
        return 0;
    s->reclaim->proc_listed[proc - 1] = 1;
    uint32_t thread = id_thread_find(s->core.ids, proc, t->thread_key);
    if (thread)
        s->reclaim->thread_listed[thread - 1] = 1;
    return 0;
}

/* The guest's own list of its threads, marked in the tables; false when it cannot be read
 * whole now. */
static bool list_guest(struct sampler *s)
{
    struct sampler_reclaim *r = s->reclaim;
    if (!s->kernel.tasks_known || !s->os.ops || !s->os.ops->threads || !s->mem)
        return false;
    memset(r->proc_listed, 0, sizeof(r->proc_listed));
    memset(r->thread_listed, 0, sizeof(r->thread_listed));
    struct hv_err err = {0};
    long n = guestos_threads(&s->os, s->mem, on_thread, s, RECLAIM_LIST_MAX, &err);
    if (n < 0 || n >= RECLAIM_LIST_MAX) {
        r->lists_failed++;
        return false;
    }
    return true;
}

/* Whether identity `label` says the guest's own id: what the guest's list can vouch for. */
static bool guest_named(const struct id_label *label)
{
    struct id_label_value v;
    return id_label_get(label, &v) && v.guest_id > 0;
}

static int by_ts(const void *a, const void *b)
{
    const struct age_cand *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Of the n candidates, the oldest `excess` (those beyond half the table). */
static size_t oldest(struct age_cand *c, size_t n, size_t live, size_t slots)
{
    if (live <= slots / 2 || !n)
        return 0;
    size_t excess = live - slots / 2;
    qsort(c, n, sizeof(*c), by_ts);
    return excess < n ? excess : n;
}

static int write_ended(struct sampler *s, uint64_t now, uint64_t proc_koid, uint64_t thread_koid,
                       struct hv_err *err)
{
    struct fxt_arg a[2] = {
        {.type = FXT_ARG_KOID, .name = fxt_str_inline(HVFXT_ARG_PROCESS), .v.u64 = proc_koid},
        {.type = FXT_ARG_KOID, .name = fxt_str_inline(HVFXT_ARG_THREAD), .v.u64 = thread_koid},
    };
    return hvfxt_write_marker(&s->w, HVFXT_IDENTITY_ENDED, now, a, thread_koid ? 2 : 1, err);
}

static int end_thread(struct sampler *s, uint32_t id, uint64_t now, struct hv_err *err)
{
    struct sampler_reclaim *r = s->reclaim;
    const struct id_thread *th = &s->core.ids->threads[id - 1];
    uint32_t proc = th->proc;
    if (s->thread_named[id - 1] &&
        write_ended(s, now, hvfxt_koid_guest_process(id_proc_number(s->core.ids, proc)),
                    hvfxt_koid_guest_thread(id_thread_number(s->core.ids, id)), err) < 0)
        return -1;
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].ops->thread_ended)
            s->src[i].ops->thread_ended(s->src[i].st, &s->env, proc, id);
    id_thread_end(s->core.ids, id);
    r->batch_threads[r->nbatch_threads++] = id;
    r->ended_threads++;
    return 0;
}

static int end_proc(struct sampler *s, uint32_t id, uint64_t now, struct hv_err *err)
{
    struct sampler_reclaim *r = s->reclaim;
    if (s->proc_named[id - 1] &&
        write_ended(s, now, hvfxt_koid_guest_process(id_proc_number(s->core.ids, id)), 0, err) < 0)
        return -1;
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].ops->process_ended)
            s->src[i].ops->process_ended(s->src[i].st, &s->env, id);
    r->recent[r->nrecent++ % RECLAIM_RECENT] =
        atomic_load_explicit(&s->core.ids->procs[id - 1].key, memory_order_relaxed);
    id_proc_end(s->core.ids, id);
    r->batch_procs[r->nbatch_procs++] = id;
    r->ended_procs++;
    return 0;
}

/* Which processes end: the listed ones the list no longer has, and the oldest unlisted ones of
 * a table more than half full. Slots a racing claim ended itself (id_table.c) go too. */
static void decide_procs(struct sampler *s, bool listed, uint64_t sweep_ns)
{
    struct sampler_reclaim *r = s->reclaim;
    struct id_table *ids = s->core.ids;
    size_t live = 0, ncand = 0;
    memset(r->proc_ending, 0, sizeof(r->proc_ending));
    for (uint32_t id = 1; id <= ID_MAX_PROCS; id++) {
        uint64_t key = atomic_load_explicit(&ids->procs[id - 1].key, memory_order_acquire);
        if (key == ID_KEY_ENDED) {
            r->proc_ending[id - 1] = 2; /* ended already: given back with the batch */
            continue;
        }
        const struct id_proc *p = id_proc_at(ids, id);
        if (!p || !id_proc_live(ids, id))
            continue;
        live++;
        /* New since the last sweep, with an ended one's key: that one had not ended. */
        if (p->info.first_ts + r->sweep_every_ns >= sweep_ns && r->nrecent) {
            unsigned n = r->nrecent < RECLAIM_RECENT ? r->nrecent : RECLAIM_RECENT;
            for (unsigned k = 0; k < n; k++)
                if (r->recent[k] == key) {
                    r->came_back++;
                    r->recent[k] = 0;
                    break;
                }
        }
        if (listed && guest_named(&p->label)) {
            if (r->proc_listed[id - 1] || p->info.first_ts >= sweep_ns)
                r->proc_missed[id - 1] = 0;
            else if (++r->proc_missed[id - 1] >= RECLAIM_MISSES) {
                r->proc_ending[id - 1] = 1;
                r->by_list++;
            }
            continue;
        }
        uint64_t last = atomic_load_explicit(&p->last_ts, memory_order_relaxed);
        if (sweep_ns > last + RECLAIM_AGE_NS)
            r->cand[ncand++] = (struct age_cand){last, id};
    }
    size_t n = oldest(r->cand, ncand, live, ID_MAX_PROCS);
    for (size_t i = 0; i < n; i++) {
        r->proc_ending[r->cand[i].id - 1] = 1;
        r->by_age++;
    }
}

static int end_threads(struct sampler *s, bool listed, uint64_t sweep_ns, uint64_t now,
                       struct hv_err *err)
{
    struct sampler_reclaim *r = s->reclaim;
    struct id_table *ids = s->core.ids;
    size_t live = 0, ncand = 0;
    for (uint32_t id = 1; id <= ID_MAX_THREADS; id++) {
        uint64_t key = atomic_load_explicit(&ids->threads[id - 1].key, memory_order_acquire);
        if (key == ID_KEY_ENDED) {
            r->batch_threads[r->nbatch_threads++] = id;
            continue;
        }
        const struct id_thread *th = id_thread_at(ids, id);
        if (!th || !id_thread_live(ids, id))
            continue;
        live++;
        uint32_t proc = th->proc;
        bool end =
            !proc || proc > ID_MAX_PROCS || r->proc_ending[proc - 1] || !id_proc_live(ids, proc);
        if (!end && listed && guest_named(&th->label)) {
            if (r->thread_listed[id - 1] || th->first_ts >= sweep_ns)
                r->thread_missed[id - 1] = 0;
            else if (++r->thread_missed[id - 1] >= RECLAIM_MISSES) {
                end = true;
                r->by_list++;
            }
        } else if (!end) {
            uint64_t last = atomic_load_explicit(&th->last_ts, memory_order_relaxed);
            if (sweep_ns > last + RECLAIM_AGE_NS)
                r->cand[ncand++] = (struct age_cand){last, id};
            continue;
        }
        if (end && end_thread(s, id, now, err) < 0)
            return -1;
    }
    size_t n = oldest(r->cand, ncand, live, ID_MAX_THREADS);
    for (size_t i = 0; i < n; i++) {
        r->by_age++;
        if (end_thread(s, r->cand[i].id, now, err) < 0)
            return -1;
    }
    return 0;
}

int sampler_reclaim_pass(struct sampler *s, uint64_t now, struct hv_err *err)
{
    struct sampler_reclaim *r = s->reclaim;
    if (r->waiting) {
        if (!exit_grace_over(&s->core, r->mark))
            return 0;
        release_batch(s);
    }
    if (!r->sweep_every_ns)
        r->sweep_every_ns = RECLAIM_SWEEP_NS;
    if (now - r->last_sweep_ns >= r->sweep_every_ns) {
        r->last_sweep_ns = now;
        r->sweeps++;
        bool listed = list_guest(s);
        /* A guest of many thousands of threads makes the list slow to read: sweep less often
         * rather than spend the drain thread on it. */
        uint64_t cost = hv_now_ns() - now;
        if (cost * 20 > r->sweep_every_ns && r->sweep_every_ns < RECLAIM_SWEEP_MAX_NS)
            r->sweep_every_ns *= 2;
        decide_procs(s, listed, now);
        if (end_threads(s, listed, now, now, err) < 0)
            return -1;
        for (uint32_t id = 1; id <= ID_MAX_PROCS; id++) {
            if (r->proc_ending[id - 1] == 2)
                r->batch_procs[r->nbatch_procs++] = id;
            else if (r->proc_ending[id - 1] == 1 && end_proc(s, id, now, err) < 0)
                return -1;
        }
    }
    if (!r->nbatch_procs && !r->nbatch_threads && !r->retired.n)
        return 0;
    /* What was retired until now waits with this batch. */
    struct retired_list t = r->batch_retired;
    r->batch_retired = r->retired;
    r->retired = t;
    exit_grace_mark(&s->core, r->mark);
    r->waiting = true;
    return 0;
}

void sampler_reclaim_summary(const struct sampler_reclaim *r, FILE *out)
{
    if (!r || (!r->ended_procs && !r->ended_threads))
        return;
    fprintf(out,
            "  guest identities ended and given back: %" PRIu64 " processes, %" PRIu64
            " threads (%" PRIu64 " gone from the guest's task list, %" PRIu64
            " aged out of a half-full table)",
            r->ended_procs, r->ended_threads, r->by_list, r->by_age);
    if (r->lists_failed)
        fprintf(out, "; the task list could not be read whole %" PRIu64 " of %" PRIu64 " times",
                r->lists_failed, r->sweeps);
    if (r->came_back)
        fprintf(out,
                "; %" PRIu64 " came back (ended while the guest still ran them: each a new "
                "koid with the same name)",
                r->came_back);
    fputc('\n', out);
}
