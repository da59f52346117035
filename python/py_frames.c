#include "python/py_frames.h"

#include <stdio.h>
#include <string.h>

int py_runtime_open(struct py_runtime *rt, const struct rt_mem *m, uint64_t runtime_va,
                    uint64_t version_va, char *why, size_t why_len)
{
    *rt = (struct py_runtime){0};
    /* Py_Version is a constant nothing reads at run time: its page may never have been
     * touched (not present), while _PyRuntime is always in use. So a 3.13+ interpreter is
     * known by its _Py_DebugOffsets alone, and Py_Version, where it reads, must agree. */
    uint64_t v, w[PY_DEBUG_OFFSETS_WORDS];
    bool have_v = rt_read_u64(m, version_va, &v);
    bool have_runtime = rt_read(m, runtime_va, w, sizeof(w));
    bool have_debug = have_runtime && !memcmp(w, "xdebugpy", 8);
    if (have_debug) {
        if (!py_layout_from_debug(w, &rt->own, why, why_len))
            return -1;
        if (have_v && w[1] >> 16 != v >> 16) {
            snprintf(why, why_len, "_Py_DebugOffsets says 0x%llx, Py_Version 0x%llx",
                     (unsigned long long)w[1], (unsigned long long)v);
            return -1;
        }
        rt->l = &rt->own;
        rt->runtime = runtime_va;
        rt->version = have_v ? v : w[1];
        return 0;
    }
    if (!have_v) {
        snprintf(why, why_len, "Py_Version at 0x%llx cannot be read",
                 (unsigned long long)version_va);
        return PY_OPEN_UNREADABLE;
    }
    /* PY_VERSION_HEX: major << 24 | minor << 16 | micro << 8 | level << 4 | serial. */
    unsigned major = (unsigned)(v >> 24) & 0xff, minor = (unsigned)(v >> 16) & 0xff;
    if (!(v >> 32) && major == 3 && minor >= 13) {
        if (!have_runtime) {
            snprintf(why, why_len, "_PyRuntime at 0x%llx cannot be read",
                     (unsigned long long)runtime_va);
            return PY_OPEN_UNREADABLE;
        }
        snprintf(why, why_len, "CPython %u.%u without _Py_DebugOffsets at _PyRuntime (0x%llx)",
                 major, minor, (unsigned long long)runtime_va);
        return -1;
    }
    const struct py_layout *l = (v >> 32) ? NULL : py_layout_for(major, minor);
    if (!l) {
        snprintf(why, why_len, "CPython %u.%u (Py_Version 0x%llx) has no layout here", major, minor,
                 (unsigned long long)v);
        return -1;
    }
    *rt = (struct py_runtime){.l = l, .runtime = runtime_va, .version = v};
    return 0;
}

uint64_t py_thread_state(const struct py_runtime *rt, const struct rt_mem *m, int64_t tid,
                         unsigned max_threads)
{
    const struct py_layout *l = rt->l;
    uint64_t interp;
    if (!l || !rt_read_u64(m, rt->runtime + l->runtime_interpreters_head, &interp))
        return 0;
    /* max_threads bounds the thread states of all interpreters together: a hostile process's
     * 64 interpreters of max_threads each would cost an exit 64 times the bound. */
    unsigned seen = 0;
    for (unsigned i = 0; interp && i < PY_MAX_INTERPRETERS && seen < max_threads; i++) {
        uint64_t ts;
        if (!rt_read_u64(m, interp + l->interp_threads_head, &ts))
            return 0;
        for (; ts && seen < max_threads; seen++) {
            uint64_t native;
            if (!rt_read_u64(m, ts + l->tstate_native_thread_id, &native))
                break;
            if ((int64_t)native == tid)
                return ts;
            if (!rt_read_u64(m, ts + l->tstate_next, &ts))
                break;
        }
        if (!rt_read_u64(m, interp + l->interp_next, &interp))
            return 0;
    }
    return 0;
}

/* The span of a frame the reader needs, [lo, hi): one read per frame when it is small (a
 * frame's fields are close together in every version), each field's own read otherwise. */
#define PY_FRAME_SPAN_MAX 256

static uint64_t span_lo(const struct py_layout *l)
{
    uint64_t lo = l->frame_code;
    const uint64_t f[] = {l->frame_previous, l->frame_instr, l->frame_owner,
                          l->frame_is_entry ? l->frame_is_entry : l->frame_owner};
    for (unsigned i = 0; i < 4; i++)
        lo = f[i] < lo ? f[i] : lo;
    return lo;
}

static uint64_t span_hi(const struct py_layout *l)
{
    uint64_t hi = l->frame_owner + 1;
    const uint64_t f[] = {l->frame_code + 8, l->frame_previous + 8, l->frame_instr + 8,
                          l->frame_is_entry + 1};
    for (unsigned i = 0; i < 4; i++)
        hi = f[i] > hi ? f[i] : hi;
    return hi;
}

/* One frame's fields. */
static bool read_frame(const struct py_layout *l, const struct rt_mem *m, uint64_t frame,
                       uint64_t lo, uint64_t hi, uint64_t *code, uint64_t *instr, uint8_t *owner,
                       uint8_t *entry, uint64_t *previous)
{
    if (hi - lo <= PY_FRAME_SPAN_MAX) {
        uint8_t b[PY_FRAME_SPAN_MAX];
        if (!rt_read(m, frame + lo, b, hi - lo))
            return false;
        memcpy(code, b + (l->frame_code - lo), 8);
        memcpy(instr, b + (l->frame_instr - lo), 8);
        memcpy(previous, b + (l->frame_previous - lo), 8);
        *owner = b[l->frame_owner - lo];
        *entry = l->frame_is_entry ? b[l->frame_is_entry - lo] : 0;
        return true;
    }
    return rt_read_u64(m, frame + l->frame_code, code) &&
           rt_read_u64(m, frame + l->frame_instr, instr) &&
           rt_read(m, frame + l->frame_owner, owner, 1) &&
           (!l->frame_is_entry || rt_read(m, frame + l->frame_is_entry, entry, 1)) &&
           rt_read_u64(m, frame + l->frame_previous, previous);
}

unsigned py_frames(const struct py_runtime *rt, const struct rt_mem *m, uint64_t tstate,
                   struct py_frame *out, unsigned max)
{
    const struct py_layout *l = rt->l;
    uint64_t frame, holder = tstate;
    if (!l || (l->tstate_cframe && !rt_read_u64(m, tstate + l->tstate_cframe, &holder)) ||
        !rt_read_u64(m, holder + l->tstate_current_frame, &frame))
        return 0;
    uint64_t lo = span_lo(l), hi = span_hi(l);
    unsigned n = 0;
    /* Twice max steps: shims are left out, a longer chain is cut (or is a cycle). */
    for (unsigned steps = 0; frame && n < max && steps < 2 * max; steps++) {
        uint64_t code, instr, previous;
        uint8_t owner = 0, entry = 0;
        if ((frame & 7) ||
            !read_frame(l, m, frame, lo, hi, &code, &instr, &owner, &entry, &previous))
            break;
        if (l->owner_cstack < 0 || owner != (uint8_t)l->owner_cstack)
            out[n++] = (struct py_frame){.code = code, .instr = instr, .entry = entry != 0};
        else if (n > 0)
            out[n - 1].entry = true; /* 3.12+: a C caller's shim; the frame before it entered */
        frame = previous;
    }
    return n;
}
