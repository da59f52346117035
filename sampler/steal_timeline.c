/* Steal time over the recording: the drain thread reads each running vCPU thread's run-queue
 * wait (sampler/thread_sched.h) every STEAL_EVERY_NS and writes it as a "vcpu_steal" marker
 * (schema/schema.h), then once more at the vCPU's stop with the value the summary prints. The
 * difference of two markers is the steal between them: `hvprof report --format timeline` draws
 * it as a counter per vCPU (docs/sampling.md, "Steal time"). One small file read per vCPU each
 * 100 ms, on the drain thread: never at an exit. */
#include <stdlib.h>

#include "sampler/sampler_priv.h"
#include "sampler/thread_sched.h"
#include "schema/recording.h"

#define STEAL_EVERY_NS 100000000ull /* 0.1 s: a timeline's resolution, 10 reads a second */

struct sampler_steal_vcpu {
    uint64_t next_ns;
    bool ended; /* its stop's marker written */
};

struct sampler_steal {
    unsigned n;
    struct sampler_steal_vcpu v[];
};

int sampler_steal_init(struct sampler *s, struct hv_err *err)
{
    /* A flight recorder's file is a snapshot of its ring: markers on the control thread would
     * span the whole session, not its window. */
    if (s->flight_on)
        return 0;
    s->steal = calloc(1, sizeof(*s->steal) + s->cfg.nvcpus * sizeof(s->steal->v[0]));
    if (!s->steal)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    s->steal->n = s->cfg.nvcpus;
    return 0;
}

void sampler_steal_free(struct sampler *s)
{
    free(s->steal);
    s->steal = NULL;
}

static int marker(struct sampler *s, unsigned vcpu, uint64_t ts, uint64_t steal_ns,
                  struct hv_err *err)
{
    struct fxt_arg args[2] = {
        {.type = FXT_ARG_U32, .name = fxt_str_inline(HVFXT_ARG_VCPU), .v.u32 = vcpu},
        {.type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_STEAL_NS), .v.u64 = steal_ns},
    };
    return hvfxt_write_marker(&s->w, HVFXT_VCPU_STEAL, ts, args, 2, err);
}

int sampler_steal_poll(struct sampler *s, uint64_t now, struct hv_err *err)
{
    struct sampler_steal *k = s->steal;
    if (!k)
        return 0;
    for (unsigned i = 0; i < k->n; i++) {
        struct exit_vcpu *sv = &s->core.v[i];
        if (k->v[i].ended)
            continue;
        pid_t tid = atomic_load_explicit(&sv->st.host_tid, memory_order_acquire);
        if (!tid)
            continue; /* not started, or no schedstat on this host */
        if (atomic_load_explicit(&sv->stopped, memory_order_acquire)) {
            /* Its stop measured the whole span: the summary's number, at the stop's time. */
            k->v[i].ended = true;
            if (sv->st.steal_known &&
                marker(s, i, sv->st.wall0_ns + sv->st.wall_ns, sv->st.steal_ns, err) < 0)
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
        if (marker(s, i, hv_now_ns(), ts.wait_ns - sv->st.wait0_ns, err) < 0)
            return -1;
    }
    return 0;
}
