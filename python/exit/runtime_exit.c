/* Python's exit half (runtime/runtime.h, docs/python.md): the frame chain of the sampled
 * thread's PyThreadState, as addresses only (each frame's code object and instruction
 * pointer). The exit core's rules: reads through the vCPU's walker only (its translation
 * cache), no allocation, bounded by PY_EXIT_MAX_THREADS thread states and the caller's frames
 * (RUNTIME_MAX_FRAMES). */
#include "guestwalk/walker.h"
#include "python/py_frames.h"
#include "runtime/runtime.h"
#include "schema/encode.h"

#define PY_EXIT_MAX_THREADS 256 /* thread states looked through (all interpreters together) */

static bool read_guest(void *ctx, uint64_t va, void *dst, size_t len)
{
    return gw_read_virt(ctx, va, dst, len, true, NULL) == 0;
}

static uint32_t python_frames(const void *data, struct gw_walker *w, int64_t tid, uint64_t *out,
                              uint32_t max)
{
    const struct py_runtime *rt = data;
    struct rt_mem m = {read_guest, w};
    uint64_t ts = py_thread_state(rt, &m, tid, PY_EXIT_MAX_THREADS);
    if (!ts)
        return 0;
    struct py_frame f[RUNTIME_MAX_FRAMES + 1];
    unsigned limit = max / 2 < RUNTIME_MAX_FRAMES ? max / 2 : RUNTIME_MAX_FRAMES;
    unsigned n = py_frames(rt, &m, ts, f, limit + 1);
    bool cut = n > limit;
    if (cut)
        n = limit;
    uint32_t k = 0;
    for (unsigned i = 0; i < n; i++) {
        /* A code object is a user-space address: anything in the two flag bits is not one. */
        if (f[i].code & ~HVFXT_RT_CODE_MASK)
            break;
        out[k++] = f[i].code | (f[i].entry ? HVFXT_RT_ENTRY : 0);
        out[k++] = f[i].instr;
    }
    if (cut && k == 2 * (uint32_t)n)
        out[k - 2] |= HVFXT_RT_CUT;
    return k;
}

const struct runtime_exit_ops runtime_python_exit = {
    .id = HVFXT_RUNTIME_PYTHON,
    .name = "python",
    .frames = python_frames,
};
