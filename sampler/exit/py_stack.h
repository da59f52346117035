/* Python frames at the exit (docs/python.md): for a sample of a process whose CPython the
 * recorder found, the frame chain of the sampled thread's PyThreadState, as addresses only
 * (each frame's code object and instruction pointer); the drain thread names the code objects.
 *
 * The recorder publishes one interpreter description per process id (an immutable struct
 * py_runtime, release store, kept until the recording closes), as it does unwind maps
 * (cfi_maps.h): a vCPU loads it with acquire and never waits. */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

#include "python/py_frames.h"
#include "sampler/exit/id_table.h"

#define EXIT_PY_MAX_FRAMES  128 /* Python frames read per sample (the outermost cut beyond) */
#define EXIT_PY_MAX_THREADS 256 /* thread states looked through (all interpreters together) */

struct exit_py_runtimes {
    _Atomic(const struct py_runtime *) rt[ID_MAX_PROCS];
};

/* Exit path: process `proc`'s interpreter (acquire), NULL if none. */
static inline const struct py_runtime *exit_py_runtime(const struct exit_py_runtimes *m,
                                                       uint32_t proc)
{
    if (!m || proc == 0 || proc > ID_MAX_PROCS)
        return NULL;
    return atomic_load_explicit(&m->rt[proc - 1], memory_order_acquire);
}

/* Drain thread: publish `rt` for `proc` (1..ID_MAX_PROCS) with release. */
static inline void exit_py_publish(struct exit_py_runtimes *m, uint32_t proc,
                                   const struct py_runtime *rt)
{
    atomic_store_explicit(&m->rt[proc - 1], rt, memory_order_release);
}

struct exit_vcpu;

/* The Python frames of guest thread `tid` (the guest's own id) of process `proc`, read through
 * the vCPU's walker (its address space must be the process's) into sv->py as the sample field
 * python_stack holds them (schema/encode.h: code word, instruction pointer). Returns the words
 * written (0: no interpreter, no thread state, or nothing readable). */
uint32_t exit_py_stack(struct exit_vcpu *sv, uint32_t proc, int64_t tid);
