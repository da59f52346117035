/* Language runtimes' frames at the exit (runtime_stack.h): the runtime's own exit half reads
 * them (runtime/runtime.h, under the exit core's rules); this counts and times it. */
#include "sampler/exit/runtime_stack.h"

#include "sampler/exit/core.h"

uint32_t exit_runtime_stack(struct exit_vcpu *sv, uint32_t proc, int64_t tid)
{
    const struct exit_runtime *rt = exit_runtime_of(sv->core->rt, proc);
    if (!rt || tid <= 0)
        return 0;
    uint64_t t0 = hv_now_ns();
    sv->st.rt_reads++;
    uint32_t w = rt->ops->frames(rt->data, &sv->walker, tid, sv->rt + 1, 2 * RUNTIME_MAX_FRAMES);
    w &= ~1u; /* whole frames */
    sv->st.rt_samples += w > 0;
    sv->st.rt_frames += w / 2;
    sv->st.t_rt += hv_now_ns() - t0;
    if (!w)
        return 0;
    sv->rt[0] = rt->ops->id;
    return 1 + w;
}
