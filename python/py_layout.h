/* Where CPython keeps what a profiler reads, per minor version (docs/python.md): the offsets of
 * the fields that lead from _PyRuntime to each thread's frames, and from a frame to its code
 * object's names, file and line table, on x86-64 Linux builds without Py_DEBUG or free
 * threading (what Debian ships).
 *
 * 3.11: computed with offsetof() against Debian 12's python3.11-dev 3.11.2 internal headers
 * (Include/internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h, cpython/code.h,
 * cpython/pystate.h, cpython/unicodeobject.h of CPython v3.11), which fix them for every 3.11.x:
 * CPython keeps its ABI, internal structures included, within a minor version. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct py_layout {
    unsigned major, minor;
    /* _PyRuntimeState */
    uint64_t runtime_interpreters_head;
    /* PyInterpreterState */
    uint64_t interp_next, interp_threads_head;
    /* PyThreadState: the next thread, the native thread id (the kernel's tid, since 3.11), the
     * current frame: tstate->cframe->current_frame (3.11, 3.12) or tstate->current_frame. */
    uint64_t tstate_next, tstate_native_thread_id;
    uint64_t tstate_cframe;        /* 0: current_frame is in the thread state itself */
    uint64_t tstate_current_frame; /* in _PyCFrame (3.11, 3.12) or PyThreadState */
    /* _PyInterpreterFrame */
    uint64_t frame_code, frame_previous, frame_instr, frame_owner;
    uint64_t frame_is_entry; /* 3.11's is_entry (bool); 0: none */
    /* 3.11, 3.12: prev_instr, the last instruction begun; 3.13: instr_ptr, the one being run or
     * to run next (a caller's: its CALL). */
    bool instr_is_prev;
    /* An owner value whose frames are the C stack's, not Python code (3.12+: shim frames
     * between C and Python); -1: none. */
    int owner_cstack;
    /* PyCodeObject */
    uint64_t code_filename, code_name, code_qualname, code_linetable, code_firstlineno;
    uint64_t code_adaptive; /* co_code_adaptive: the bytecode, 2-byte code units */
    /* str objects: PyASCIIObject's length and state; the data of a compact ASCII string after
     * PyASCIIObject, of another compact one after PyCompactUnicodeObject. */
    uint64_t str_length, str_state, str_ascii_data, str_compact_data;
    /* bytes objects: ob_size and ob_sval */
    uint64_t bytes_size, bytes_data;
};

/* The table's layout for CPython major.minor, or NULL when there is none. */
const struct py_layout *py_layout_for(unsigned major, unsigned minor);

/* CPython 3.13 publishes its own offsets: _Py_DebugOffsets, the first member of _PyRuntime
 * (Include/internal/pycore_runtime.h of CPython v3.13): the cookie "xdebugpy", PY_VERSION_HEX,
 * free_threaded, then per structure its size and its fields' offsets, 8 bytes each. */
#define PY_DEBUG_OFFSETS_WORDS 73 /* 3.13's struct, in 8-byte words (the cookie the first) */

/* The layout from a 3.13 interpreter's _Py_DebugOffsets (`words`, read from the start of its
 * _PyRuntime). False (with why) when it is not one this reader knows: another cookie or
 * version, a free-threaded build, an offset outside its structure's size. */
bool py_layout_from_debug(const uint64_t words[PY_DEBUG_OFFSETS_WORDS], struct py_layout *out,
                          char *why, size_t why_len);
