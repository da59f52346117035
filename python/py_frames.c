#include "python/py_frames.h"

#include <stdio.h>

int py_runtime_open(struct py_runtime *rt, const struct py_mem *m, uint64_t runtime_va,
                    uint64_t version_va, char *why, size_t why_len)
{
    *rt = (struct py_runtime){0};
    uint64_t v;
    if (!py_read_u64(m, version_va, &v)) {
        snprintf(why, why_len, "Py_Version at 0x%llx cannot be read",
                 (unsigned long long)version_va);
        return -1;
    }
    /* PY_VERSION_HEX: major << 24 | minor << 16 | micro << 8 | level << 4 | serial. */
    unsigned major = (unsigned)(v >> 24) & 0xff, minor = (unsigned)(v >> 16) & 0xff;
    if (!(v >> 32) && major == 3 && minor >= 13) {
        uint64_t w[PY_DEBUG_OFFSETS_WORDS];
        if (!py_read(m, runtime_va, w, sizeof(w))) {
            snprintf(why, why_len, "_PyRuntime at 0x%llx cannot be read",
                     (unsigned long long)runtime_va);
            return -1;
        }
        if (!py_layout_from_debug(w, &rt->own, why, why_len))
            return -1;
        if (w[1] >> 16 != v >> 16) {
            snprintf(why, why_len, "_Py_DebugOffsets says 0x%llx, Py_Version 0x%llx",
                     (unsigned long long)w[1], (unsigned long long)v);
            return -1;
        }
        rt->l = &rt->own;
        rt->runtime = runtime_va;
        rt->version = v;
        return 0;
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

uint64_t py_thread_state(const struct py_runtime *rt, const struct py_mem *m, int64_t tid)
{
    const struct py_layout *l = rt->l;
    uint64_t interp;
    if (!l || !py_read_u64(m, rt->runtime + l->runtime_interpreters_head, &interp))
        return 0;
    for (unsigned i = 0; interp && i < PY_MAX_INTERPRETERS; i++) {
        uint64_t ts;
        if (!py_read_u64(m, interp + l->interp_threads_head, &ts))
            return 0;
        for (unsigned j = 0; ts && j < PY_MAX_THREADS; j++) {
            uint64_t native;
            if (!py_read_u64(m, ts + l->tstate_native_thread_id, &native))
                break;
            if ((int64_t)native == tid)
                return ts;
            if (!py_read_u64(m, ts + l->tstate_next, &ts))
                break;
        }
        if (!py_read_u64(m, interp + l->interp_next, &interp))
            return 0;
    }
    return 0;
}

unsigned py_frames(const struct py_runtime *rt, const struct py_mem *m, uint64_t tstate,
                   struct py_frame *out, unsigned max)
{
    const struct py_layout *l = rt->l;
    uint64_t frame, holder = tstate;
    if (!l || (l->tstate_cframe && !py_read_u64(m, tstate + l->tstate_cframe, &holder)) ||
        !py_read_u64(m, holder + l->tstate_current_frame, &frame))
        return 0;
    unsigned n = 0;
    /* Twice max steps: shims are left out, a longer chain is cut (or is a cycle). */
    for (unsigned steps = 0; frame && n < max && steps < 2 * max; steps++) {
        uint64_t code, instr;
        uint8_t owner = 0, entry = 0;
        if ((frame & 7) || !py_read_u64(m, frame + l->frame_code, &code) ||
            !py_read_u64(m, frame + l->frame_instr, &instr) ||
            !py_read(m, frame + l->frame_owner, &owner, 1) ||
            (l->frame_is_entry && !py_read(m, frame + l->frame_is_entry, &entry, 1)))
            break;
        if (l->owner_cstack < 0 || owner != (uint8_t)l->owner_cstack)
            out[n++] = (struct py_frame){.code = code, .instr = instr, .entry = entry != 0};
        if (!py_read_u64(m, frame + l->frame_previous, &frame))
            break;
    }
    return n;
}
