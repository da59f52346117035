/* The VMM's hooks of a recording (vmm/vm.h): the vCPU thread's start (its walker and timers),
 * each forced exit (the exit core's, sampler/exit/), its stop (counters, timers, the
 * continuations it still carries). The start and stop run on the vCPU thread outside the guest's
 * time, so they may allocate and make system calls; the exit itself may not. */
#include <string.h>

#include "sampler/exit/continuation.h"
#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"
#include "sampler/parts/thread_sched.h"

static void vcpu_interrupted(void *ctx, struct vcpu *v, uint64_t ticks)
{
    struct sampler *s = ctx;
    exit_vcpu_interrupted(&s->core, v, ticks);
}

static void vcpu_exited(void *ctx, struct vcpu *v, uint32_t site, uint64_t exit_ns,
                        uint64_t done_ns)
{
    struct sampler *s = ctx;
    exit_vcpu_exited(&s->core, v, site, exit_ns, done_ns);
}

static int vcpu_start(void *ctx, struct vcpu *v, struct hv_err *err)
{
    struct sampler *s = ctx;
    if ((unsigned)v->index >= s->cfg.nvcpus)
        return hv_errf(err, "sampler: vCPU %d was not configured", v->index);
    struct exit_vcpu *sv = &s->core.v[v->index];
    if (sampler_vcpu_prepare(sv, err) < 0 || sampler_timers_create(sv, v->tid, err) < 0)
        return hv_err_prefix(err, "vcpu%d", v->index);
    struct thread_sched ts;
    sv->st.sched_fd = thread_sched_open_self();
    if (sv->st.sched_fd >= 0 && thread_sched_read(sv->st.sched_fd, &ts) == 0) {
        sv->st.wait0_ns = ts.wait_ns;
        sv->st.wall0_ns = hv_now_ns();
        sv->st.steal_known = true;
        atomic_store_explicit(&sv->st.host_tid, v->tid, memory_order_release);
    }
    return 0;
}

static void vcpu_stop(void *ctx, struct vcpu *v)
{
    struct sampler *s = ctx;
    struct exit_vcpu *sv = &s->core.v[v->index];
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        sv->st.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
    struct thread_sched ts;
    if (sv->st.steal_known && thread_sched_read(sv->st.sched_fd, &ts) == 0 &&
        ts.wait_ns >= sv->st.wait0_ns) {
        sv->st.steal_ns = ts.wait_ns - sv->st.wait0_ns;
        sv->st.wall_ns = hv_now_ns() - sv->st.wall0_ns;
    } else {
        sv->st.steal_known = false;
    }
    if (sv->st.sched_fd >= 0)
        close(sv->st.sched_fd);
    sv->st.sched_fd = -1;
    /* LSTAR - entry_SYSCALL_64 is a Linux guest's KASLR slide (docs/linux.md): read at the
     * end, when the guest has set it. */
    struct gw_snapshot snap;
    if (v->index == 0 && vcpu_snapshot(v, &snap, GW_SNAP_MSRS) == 0 && (snap.have & GW_SNAP_MSRS))
        atomic_store(&s->lstar, snap.lstar);
    _Static_assert(sizeof(sv->st.vmm_exits) == sizeof(v->exit_counts), "exit kinds");
    memcpy(sv->st.vmm_exits, v->exit_counts, sizeof(sv->st.vmm_exits));
    atomic_store(&sv->stopped, true);
    sampler_timers_delete(sv);
    exit_conts_end(sv, hv_now_ns());
    if (sv->walker_ok) {
        gw_walker_fini(&sv->walker);
        sv->walker_ok = false;
    }
}

void sampler_hooks(struct sampler *s, struct vm_hooks *out)
{
    *out = (struct vm_hooks){
        .ctx = s,
        .vcpu_start = vcpu_start,
        .vcpu_interrupted = vcpu_interrupted,
        .vcpu_stop = vcpu_stop,
        .vcpu_exited = s->cfg.exit_events ? vcpu_exited : NULL,
    };
}

int sampler_vcpu_prepare(struct exit_vcpu *sv, struct hv_err *err)
{
    struct sampler *s = sampler_of(sv->core);
    if (s->cfg.mode == SAMPLER_MODE_EXITS || sv->walker_ok)
        return 0;
    struct gw_config gc = {
        .max_depth = s->cfg.max_depth,
        .no_leaf_repair = s->cfg.no_leaf_repair,
    };
    if (gw_walker_init(&sv->walker, s->mem, &gc, err) < 0)
        return -1;
    sv->walker_ok = true;
    return 0;
}
