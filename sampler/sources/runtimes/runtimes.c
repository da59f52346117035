/* The language runtimes of guest processes (runtime/runtime.h, docs/runtimes.md), as one
 * recorder source: every runtime's record half, in HV_RUNTIMES's order, sees each look at an
 * address space and publishes what its exit half reads for that process (one runtime a
 * process: the first that finds itself there); each sample record about to be written has the
 * code objects of its runtime frames named by their runtime (runtime code records). It hands
 * the exit core the published table at create (exit_core.rt). The recorder source
 * "runtimes". */
#include <stdlib.h>

#include "common/err.h"
#include "runtime/runtime.h"
#include "sampler/exit/core.h"
#include "sampler/exit/runtime_stack.h"
#include "sampler/source/source.h"
#include "schema/encode.h"
#include "schema/schema.h"

#define RUNTIME_RECORD_ROW_(name, id) &runtime_##name##_record,
static const struct runtime_record_ops *const runtimes[] = {HV_RUNTIMES(RUNTIME_RECORD_ROW_)};
#undef RUNTIME_RECORD_ROW_
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

struct runtimes {
    struct exit_runtimes pub;  /* the exit core's hand-off */
    struct exit_runtime *proc; /* per process: what is published (ops NULL: none) */
    bool *ended;               /* per process slot: its process ended, its entry maybe in use */
    const struct runtime_record_ops *on[NRUNTIMES]; /* those this recording reads */
    void *st[NRUNTIMES];
    const struct runtime_record_ops *by_id[HVFXT_RUNTIME_MAX];
    void *st_by_id[HVFXT_RUNTIME_MAX];
};

static void publish(void *ctx, uint32_t proc, const struct runtime_exit_ops *exit, const void *data)
{
    struct runtimes *r = ctx;
    if (!proc || proc > ID_MAX_PROCS || (r->proc[proc - 1].ops && !r->ended[proc - 1]))
        return; /* one runtime a process, published once: the exit path may hold it */
    /* An ended process's entry is rewritten only by its slot's next process, which exists
     * only after the exit core's grace: no vCPU reads the old one any more. */
    r->ended[proc - 1] = false;
    r->proc[proc - 1] = (struct exit_runtime){exit, data};
    exit_runtime_publish(&r->pub, proc, &r->proc[proc - 1]);
}

static void runtimes_destroy(void *st)
{
    struct runtimes *r = st;
    if (!r)
        return;
    for (size_t i = 0; i < NRUNTIMES; i++)
        if (r->on[i] && r->on[i]->destroy)
            r->on[i]->destroy(r->st[i]);
    free(r->proc);
    free(r->ended);
    free(r);
}

static int runtimes_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    struct runtimes *r = calloc(1, sizeof(*r));
    if (!r || !(r->proc = calloc(ID_MAX_PROCS, sizeof(*r->proc))) ||
        !(r->ended = calloc(ID_MAX_PROCS, sizeof(*r->ended)))) {
        if (r)
            free(r->proc);
        free(r);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    *st = r;
    for (size_t i = 0; i < NRUNTIMES; i++) {
        const struct runtime_record_ops *ops = runtimes[i];
        if (ops->wanted && !ops->wanted(env->cfg))
            continue;
        if (ops->create && ops->create(env, &r->st[i], err) < 0) {
            hv_err_prefix(err, "%s", ops->name);
            return -1;
        }
        r->on[i] = ops;
        r->by_id[ops->id] = ops;
        r->st_by_id[ops->id] = r->st[i];
    }
    env->core->rt = &r->pub; /* the exit path reads the published runtimes from here on */
    return 0;
}

static void runtimes_address_space(void *st, const struct rec_env *env, uint32_t proc,
                                   const struct guestos_as *as, const struct discover_module *found,
                                   size_t n)
{
    struct runtimes *r = st;
    struct runtime_publisher pub = {publish, r};
    for (size_t i = 0; i < NRUNTIMES; i++)
        if (r->on[i] && r->on[i]->address_space &&
            !(proc && proc <= ID_MAX_PROCS && r->proc[proc - 1].ops && !r->ended[proc - 1]))
            r->on[i]->address_space(r->st[i], env, proc, as, found, n, &pub);
}

/* Its process ended: unpublished, and each runtime drops what it kept for it (what its exit
 * half may still read, through rec_retire). */
static void runtimes_process_ended(void *st, const struct rec_env *env, uint32_t proc)
{
    struct runtimes *r = st;
    if (!r || !proc || proc > ID_MAX_PROCS)
        return;
    if (r->proc[proc - 1].ops && !r->ended[proc - 1]) {
        exit_runtime_publish(&r->pub, proc, NULL);
        r->ended[proc - 1] = true;
    }
    for (size_t i = 0; i < NRUNTIMES; i++)
        if (r->on[i] && r->on[i]->process_ended)
            r->on[i]->process_ended(r->st[i], env, proc);
}

static int runtimes_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                         bool final, struct hv_err *err)
{
    (void)stage, (void) final, (void)err;
    struct runtimes *r = st;
    if (!env->mem)
        return 0;
    struct runtime_publisher pub = {publish, r};
    for (size_t i = 0; i < NRUNTIMES && rec_may_work(env); i++)
        if (r->on[i] && r->on[i]->poll)
            r->on[i]->poll(r->st[i], env, now, &pub);
    return 0;
}

/* A sample's runtime frames: each code object named by its runtime before the sample is
 * written. */
static int runtimes_visit(void *st, const struct rec_env *env, const uint64_t *rec, uint32_t nwords,
                          struct hv_err *err)
{
    struct runtimes *r = st;
    uint64_t pid;
    const uint64_t *rt;
    uint32_t n;
    if (!hvfxt_record_runtime(rec, nwords, &pid, &rt, &n) || !hvfxt_koid_is_guest_process(pid))
        return 0;
    /* Its process now (a sample of one that ended, in flight, names nothing). */
    uint32_t proc = id_proc_of_number(env->core->ids, pid - HVFXT_KOID_PROCESS_BASE);
    if (!proc)
        return 0;
    const struct runtime_record_ops *ops = rt[0] < HVFXT_RUNTIME_MAX ? r->by_id[rt[0]] : NULL;
    /* Frames come only from a runtime published here, whose record half is on: any other id
     * names nothing. */
    if (!ops || !ops->name_code)
        return 0;
    void *rst = r->st_by_id[rt[0]];
    uint64_t now = hv_now_ns();
    for (uint32_t i = 1; i + 1 < n; i += 2) {
        uint64_t code = rt[i] & HVFXT_RT_CODE_MASK;
        if (code && ops->name_code(rst, env, proc, pid, code, now, err) < 0) {
            hv_err_prefix(err, "%s", ops->name);
            return -1;
        }
    }
    return 0;
}

static void runtimes_summary(const void *st, const struct rec_env *env, FILE *out)
{
    const struct runtimes *r = st;
    for (size_t i = 0; i < NRUNTIMES; i++)
        if (r->on[i] && r->on[i]->summary)
            r->on[i]->summary(r->st[i], env, out);
}

const struct rec_source_ops rec_source_runtimes = {
    .name = "runtimes",
    .create = runtimes_create,
    .stages = REC_STAGE_BIT(REC_STAGE_GUEST),
    .poll = runtimes_poll,
    .address_space = runtimes_address_space,
    .process_ended = runtimes_process_ended,
    .visit = runtimes_visit,
    .summary = runtimes_summary,
    .destroy = runtimes_destroy,
};
