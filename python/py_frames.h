/* A CPython interpreter in a process, read from outside (docs/python.md): from _PyRuntime to
 * the thread state of a native thread (PyThreadState.native_thread_id, the kernel's tid), and
 * its frame chain from the current frame outwards: each frame's code object and instruction
 * pointer, which py_code.h turns into a name, a file and a line. Bounded: PY_MAX_INTERPRETERS
 * interpreters, PY_MAX_THREADS thread states, the caller's frame count; a cycle in a hostile
 * chain ends at the bound. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "python/py_layout.h"
#include "runtime/rt_mem.h"

#define PY_MAX_INTERPRETERS 64
#define PY_MAX_THREADS      4096

struct py_runtime {
    const struct py_layout *l;
    struct py_layout own; /* 3.13+: read from the interpreter's _Py_DebugOffsets */
    uint64_t runtime;     /* the address of _PyRuntime */
    uint64_t version;     /* PY_VERSION_HEX, as Py_Version holds it (0x030b02f0: 3.11.2 final) */
};

/* The interpreter whose _PyRuntime is at runtime_va and whose Py_Version (a const unsigned long
 * beside it, exported since 3.11) is at version_va: 3.11 from the table (3.12 has none yet), 3.13
 * from its _Py_DebugOffsets alone (checked against Py_Version where that reads: a constant whose
 * page may never have been touched). 0; PY_OPEN_UNREADABLE with why when what it needs cannot be
 * read (yet: a page not present); -1 with why when it is no interpreter this reader knows (a
 * version without a layout, offsets not 3.13's). */
#define PY_OPEN_UNREADABLE (-2)
int py_runtime_open(struct py_runtime *rt, const struct rt_mem *m, uint64_t runtime_va,
                    uint64_t version_va, char *why, size_t why_len);

/* The PyThreadState of native thread `tid`, or 0 (no such thread state among the first
 * max_threads (<= PY_MAX_THREADS) of all interpreters together, or the lists cannot be
 * read). */
uint64_t py_thread_state(const struct py_runtime *rt, const struct rt_mem *m, int64_t tid,
                         unsigned max_threads);

/* One Python frame: its code object and instruction pointer as the frame holds them. `entry`:
 * the frame an evaluation loop was entered with (3.11's is_entry): the Python frames of one
 * native _PyEval_EvalFrameDefault end there. From 3.12 the evaluation loop marks its entry
 * with a shim frame the C stack owns: the frame before a shim is the entry frame. */
struct py_frame {
    uint64_t code, instr;
    bool entry;
};

/* The frames of thread state tstate, innermost first, at most max. Returns how many; frames
 * that are the C stack's own (3.12+'s shims) are left out. */
unsigned py_frames(const struct py_runtime *rt, const struct rt_mem *m, uint64_t tstate,
                   struct py_frame *out, unsigned max);
