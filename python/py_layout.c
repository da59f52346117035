#include "python/py_layout.h"

#include <stdio.h>
#include <string.h>

/* CPython 3.11 (see py_layout.h for where the numbers come from). */
static const struct py_layout py311 = {
    .major = 3,
    .minor = 11,
    .runtime_interpreters_head = 40,
    .interp_next = 0,
    .interp_threads_head = 16,
    .tstate_next = 8,
    .tstate_native_thread_id = 160,
    .tstate_cframe = 56,
    .tstate_current_frame = 8,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_instr = 56,
    .frame_owner = 69,
    .frame_is_entry = 68,
    .instr_is_prev = true,
    .owner_cstack = -1,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_linetable = 136,
    .code_firstlineno = 72,
    .code_adaptive = 184,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 48,
    .str_compact_data = 72,
    .bytes_size = 16,
    .bytes_data = 32,
};

const struct py_layout *py_layout_for(unsigned major, unsigned minor)
{
    if (major == 3 && minor == 11)
        return &py311;
    return NULL;
}

/* _Py_DebugOffsets of 3.13, word by word (the struct's members in order). */
enum {
    D_VERSION = 1,
    D_FREE_THREADED = 2,
    D_RT_SIZE = 3,
    D_RT_INTERPRETERS_HEAD = 5,
    D_IS_SIZE = 6,
    D_IS_NEXT = 8,
    D_IS_THREADS_HEAD = 9,
    D_TS_SIZE = 19,
    D_TS_NEXT = 21,
    D_TS_CURRENT_FRAME = 23,
    D_TS_NATIVE_THREAD_ID = 25,
    D_FR_SIZE = 28,
    D_FR_PREVIOUS = 29,
    D_FR_EXECUTABLE = 30,
    D_FR_INSTR_PTR = 31,
    D_FR_OWNER = 33,
    D_CO_SIZE = 34,
    D_CO_FILENAME = 35,
    D_CO_NAME = 36,
    D_CO_QUALNAME = 37,
    D_CO_LINETABLE = 38,
    D_CO_FIRSTLINENO = 39,
    D_CO_ADAPTIVE = 43,
    D_BY_SIZE = 64,
    D_BY_OB_SIZE = 65,
    D_BY_OB_SVAL = 66,
    D_UO_SIZE = 67,
    D_UO_STATE = 68,
    D_UO_LENGTH = 69,
    D_UO_ASCII_SIZE = 70,
};

/* Fields of one structure: each must lie within its size. */
static bool within(const uint64_t *w, unsigned size, const unsigned *fields, unsigned n)
{
    if (!w[size] || w[size] > (1u << 20))
        return false;
    for (unsigned i = 0; i < n; i++)
        if (w[fields[i]] > w[size] - 1)
            return false;
    return true;
}

bool py_layout_from_debug(const uint64_t w[PY_DEBUG_OFFSETS_WORDS], struct py_layout *out,
                          char *why, size_t why_len)
{
    if (memcmp(&w[0], "xdebugpy", 8)) {
        snprintf(why, why_len, "no _Py_DebugOffsets cookie at the start of _PyRuntime");
        return false;
    }
    if ((w[D_VERSION] >> 16) != 0x030d) {
        snprintf(why, why_len, "_Py_DebugOffsets of CPython 0x%llx: only 3.13's are read",
                 (unsigned long long)w[D_VERSION]);
        return false;
    }
    if (w[D_FREE_THREADED]) {
        snprintf(why, why_len, "a free-threaded CPython (its frames are not read)");
        return false;
    }
    static const unsigned rt[] = {D_RT_INTERPRETERS_HEAD}, is[] = {D_IS_NEXT, D_IS_THREADS_HEAD},
                          ts[] = {D_TS_NEXT, D_TS_CURRENT_FRAME, D_TS_NATIVE_THREAD_ID},
                          fr[] = {D_FR_PREVIOUS, D_FR_EXECUTABLE, D_FR_INSTR_PTR, D_FR_OWNER},
                          co[] = {D_CO_FILENAME,  D_CO_NAME,        D_CO_QUALNAME,
                                  D_CO_LINETABLE, D_CO_FIRSTLINENO, D_CO_ADAPTIVE},
                          by[] = {D_BY_OB_SIZE, D_BY_OB_SVAL}, uo[] = {D_UO_STATE, D_UO_LENGTH};
    if (!within(w, D_RT_SIZE, rt, 1) || !within(w, D_IS_SIZE, is, 2) ||
        !within(w, D_TS_SIZE, ts, 3) || !within(w, D_FR_SIZE, fr, 4) ||
        !within(w, D_CO_SIZE, co, 6) || !within(w, D_BY_SIZE, by, 2) ||
        !within(w, D_UO_SIZE, uo, 2) || !w[D_UO_ASCII_SIZE] || w[D_UO_ASCII_SIZE] > w[D_UO_SIZE]) {
        snprintf(why, why_len, "_Py_DebugOffsets with an offset outside its structure");
        return false;
    }
    *out = (struct py_layout){
        .major = 3,
        .minor = 13,
        .runtime_interpreters_head = w[D_RT_INTERPRETERS_HEAD],
        .interp_next = w[D_IS_NEXT],
        .interp_threads_head = w[D_IS_THREADS_HEAD],
        .tstate_next = w[D_TS_NEXT],
        .tstate_native_thread_id = w[D_TS_NATIVE_THREAD_ID],
        .tstate_cframe = 0,
        .tstate_current_frame = w[D_TS_CURRENT_FRAME],
        .frame_code = w[D_FR_EXECUTABLE],
        .frame_previous = w[D_FR_PREVIOUS],
        .frame_instr = w[D_FR_INSTR_PTR],
        .frame_owner = w[D_FR_OWNER],
        .frame_is_entry = 0,
        .instr_is_prev = false,
        .owner_cstack = 3, /* FRAME_OWNED_BY_CSTACK, Include/internal/pycore_frame.h */
        .code_filename = w[D_CO_FILENAME],
        .code_name = w[D_CO_NAME],
        .code_qualname = w[D_CO_QUALNAME],
        .code_linetable = w[D_CO_LINETABLE],
        .code_firstlineno = w[D_CO_FIRSTLINENO],
        .code_adaptive = w[D_CO_ADAPTIVE],
        .str_length = w[D_UO_LENGTH],
        .str_state = w[D_UO_STATE],
        .str_ascii_data = w[D_UO_ASCII_SIZE],
        /* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8 (3.12+: no wstr). */
        .str_compact_data = w[D_UO_ASCII_SIZE] + 16,
        .bytes_size = w[D_BY_OB_SIZE],
        .bytes_data = w[D_BY_OB_SVAL],
    };
    return true;
}
