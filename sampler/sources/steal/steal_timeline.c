/* Steal time over the recording: the drain thread reads each running vCPU thread's run-queue
 * wait (sampler/parts/thread_sched.h) every STEAL_EVERY_NS and writes it as a "vcpu_steal" marker
 * (schema/schema.h), then once more at the vCPU's stop with the value the summary prints. The
 * difference of two markers is the steal between them: `hvprof report --format timeline` draws
 * it as a counter per vCPU (docs/sampling.md, "Steal time"). One small file read per vCPU each
 * 100 ms, on the drain thread: never at an exit. The recorder source "steal". */
#include <stdatomic.h>
#include <stdlib.h>

#include "sampler/exit/core.h"
#include "sampler/parts/thread_sched.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

#define STEAL_EVERY_NS 100000000ull /* 0.1 s: a timeline's resolution, 10 reads a second */

struct steal_vcpu {
    uint64_t next_ns;
    bool ended; /* its stop's marker written */
};

struct steal {
    unsigned n;
    struct steal_vcpu v[];
};

/* A flight recorder's file is a snapshot of its ring: markers on the control thread would span
 * the whole session, not its window. */
static bool steal_wanted(const struct sampler_config *cfg)
{
    return !cfg->ring_bytes;
}

static int steal_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    struct steal *k = calloc(1, sizeof(*k) + env->cfg->nvcpus * sizeof(k->v[0]));
    if (!k)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    k->n = env->cfg->nvcpus;
    *st = k;
    return 0;
}

static void steal_destroy(void *st)
{
    free(st);
}

static int marker(const struct rec_env *env, unsigned vcpu, uint64_t ts, uint64_t steal_ns,
                  struct hv_err *err)
{
    struct fxt_arg args[2] = {
        {.type = FXT_ARG_U32, .name = fxt_str_inline(HVFXT_ARG_VCPU), .v.u32 = vcpu},
        {.type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_STEAL_NS), .v.u64 = steal_ns},
    };
    return hvfxt_write_marker(env->w, HVFXT_VCPU_STEAL, ts, args, 2, err);
}

static int steal_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                      bool final, struct hv_err *err)
{
    (void)stage;
    (void) final;
    struct steal *k = st;
    for (unsigned i = 0; i < k->n; i++) {
        struct exit_vcpu *sv = &env->core->v[i];
        if (k->v[i].ended)
            continue;
        pid_t tid = atomic_load_explicit(&sv->st.host_tid, memory_order_acquire);
        if (!tid)
            continue; /* not started, or no schedstat on this host */
        if (atomic_load_explicit(&sv->stopped, memory_order_acquire)) {
            /* Its stop measured the whole span: the summary's number, at the stop's time. */
            k->v[i].ended = true;
            if (sv->st.steal_known &&
                marker(env, i, sv->st.wall0_ns + sv->st.wall_ns, sv->st.steal_ns, err) < 0)
                return -1;
            continue;
        }
        if (now < k->v[i].next_ns)
            continue;
        k->v[i].next_ns = now + STEAL_EVERY_NS;
        struct thread_sched ts;
        /* A vCPU thread may stop (and its tid go, even to another thread) while it is read:
         * then nothing is written, and its stop's marker comes at the next pass. */
        if (thread_sched_of(tid, &ts) < 0 || ts.wait_ns < sv->st.wait0_ns ||
            atomic_load_explicit(&sv->stopped, memory_order_acquire))
            continue;
        if (marker(env, i, hv_now_ns(), ts.wait_ns - sv->st.wait0_ns, err) < 0)
            return -1;
    }
    return 0;
}

const struct rec_source_ops rec_source_steal = {
    .name = "steal",
    .wanted = steal_wanted,
    .create = steal_create,
    .stages = REC_STAGE_BIT(REC_STAGE_DRAINED),
    .poll = steal_poll,
    .destroy = steal_destroy,
};
