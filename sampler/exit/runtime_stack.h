/* Language runtimes' frames at the exit (runtime/runtime.h): for a sample of a process whose
 * runtime the recorder found, that runtime's exit half reads the sampled thread's frame chain,
 * as addresses only; the drain thread names the code objects.
 *
 * The recorder publishes one runtime per process id (an immutable struct exit_runtime: the
 * runtime's exit half and its data for that process, release store, kept until the recording
 * closes), as it does unwind maps (cfi_maps.h): a vCPU loads it with acquire and never waits. */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

#include "runtime/runtime.h"
#include "sampler/exit/id_table.h"

struct exit_runtime {
    const struct runtime_exit_ops *ops;
    const void *data;
};

struct exit_runtimes {
    _Atomic(const struct exit_runtime *) rt[ID_MAX_PROCS];
};

/* Exit path: process `proc`'s runtime (acquire), NULL if none. */
static inline const struct exit_runtime *exit_runtime_of(const struct exit_runtimes *m,
                                                         uint32_t proc)
{
    if (!m || proc == 0 || proc > ID_MAX_PROCS)
        return NULL;
    return atomic_load_explicit(&m->rt[proc - 1], memory_order_acquire);
}

/* Drain thread: publish `rt` for `proc` (1..ID_MAX_PROCS) with release. */
static inline void exit_runtime_publish(struct exit_runtimes *m, uint32_t proc,
                                        const struct exit_runtime *rt)
{
    atomic_store_explicit(&m->rt[proc - 1], rt, memory_order_release);
}

struct exit_vcpu;

/* The runtime frames of guest thread `tid` (the guest's own id) of process `proc`, read
 * through the vCPU's walker (its address space must be the process's) into sv->rt as the
 * sample field runtime_stack holds them (the runtime's id, then two words a frame). Returns
 * the words written (0: no runtime, or nothing readable). */
uint32_t exit_runtime_stack(struct exit_vcpu *sv, uint32_t proc, int64_t tid);
