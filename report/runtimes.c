/* The language runtimes' report halves (runtime/runtime.h), one table made from HV_RUNTIMES,
 * and the profile's calls into them: a code record to its runtime, a frame's binding to the
 * latest record, the merge of every runtime's frames after native symbolization, a runtime
 * frame's location. */
#include "report/runtimes.h"

#include "runtime/runtime.h"
#include "schema/decode.h"

#define RUNTIME_REPORT_ROW_(name, id) [id] = &runtime_##name##_report,
static const struct runtime_report_ops *const by_id[HVFXT_RUNTIME_MAX] = {
    HV_RUNTIMES(RUNTIME_REPORT_ROW_)};
#undef RUNTIME_REPORT_ROW_

static const struct runtime_report_ops *runtime_of(unsigned id)
{
    return id < HVFXT_RUNTIME_MAX ? by_id[id] : NULL;
}

int profile_add_code(struct profile *p, const struct hvfxt_code_view *c, struct hv_err *err)
{
    const struct runtime_report_ops *rt = runtime_of(c->runtime);
    return rt && rt->add_code ? rt->add_code(p, c, err) : 0;
}

int64_t profile_code_latest(const struct profile *p, unsigned runtime, uint64_t pid, uint64_t code)
{
    const struct runtime_report_ops *rt = runtime_of(runtime);
    return rt && rt->code_latest ? rt->code_latest(p, pid, code) : -1;
}

uint64_t profile_loc_address(const struct profile *p, const struct prof_loc *l)
{
    const struct runtime_report_ops *rt =
        (l->flags & PROF_FRAME_RUNTIME) ? runtime_of(PROF_FRAME_RT_ID(l->flags)) : NULL;
    return rt && rt->loc_address ? rt->loc_address(p, l) : l->addr;
}

int prof_runtimes_merge(struct profile *p, struct hv_err *err)
{
    for (unsigned id = 0; id < HVFXT_RUNTIME_MAX; id++)
        if (by_id[id] && by_id[id]->merge && by_id[id]->merge(p, err) < 0)
            return -1;
    return 0;
}

bool prof_runtime_resolve(struct profile *p, struct prof_loc *l, int *rc, struct hv_err *err)
{
    const struct runtime_report_ops *rt = runtime_of(PROF_FRAME_RT_ID(l->flags));
    if (!rt || !rt->resolve)
        return false;
    *rc = rt->resolve(p, l, err);
    return true;
}
