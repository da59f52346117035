/* Python frames at the exit (py_stack.h). Exit-path rules: reads through the vCPU's walker
 * only (its translation cache), no allocation, bounded by EXIT_PY_MAX_THREADS thread states and
 * EXIT_PY_MAX_FRAMES frames. */
#include "sampler/exit/py_stack.h"

#include "sampler/exit/core.h"

static bool read_guest(void *ctx, uint64_t va, void *dst, size_t len)
{
    return gw_read_virt(ctx, va, dst, len, true, NULL) == 0;
}

uint32_t exit_py_stack(struct exit_vcpu *sv, uint32_t proc, int64_t tid)
{
    const struct py_runtime *rt = exit_py_runtime(sv->core->py, proc);
    if (!rt || tid <= 0)
        return 0;
    struct py_mem m = {read_guest, &sv->walker};
    uint64_t t0 = hv_now_ns();
    sv->st.py_reads++;
    uint64_t ts = py_thread_state(rt, &m, tid, EXIT_PY_MAX_THREADS);
    if (!ts) {
        sv->st.t_py += hv_now_ns() - t0;
        return 0;
    }
    struct py_frame f[EXIT_PY_MAX_FRAMES + 1];
    unsigned n = py_frames(rt, &m, ts, f, EXIT_PY_MAX_FRAMES + 1);
    bool cut = n > EXIT_PY_MAX_FRAMES;
    if (cut)
        n = EXIT_PY_MAX_FRAMES;
    uint32_t w = 0;
    for (unsigned i = 0; i < n; i++) {
        /* A code object is a user-space address: anything in the two flag bits is not one. */
        if (f[i].code & ~HVFXT_PY_CODE_MASK)
            break;
        sv->py[w++] = f[i].code | (f[i].entry ? HVFXT_PY_ENTRY : 0);
        sv->py[w++] = f[i].instr;
    }
    if (cut && w == 2 * (uint32_t)n)
        sv->py[w - 2] |= HVFXT_PY_CUT;
    sv->st.py_samples += w > 0;
    sv->st.py_frames += w / 2;
    sv->st.t_py += hv_now_ns() - t0;
    return w;
}
