#include "python/py_layout.h"

#include <stddef.h>

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
