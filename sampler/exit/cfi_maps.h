/* The per-process unwind maps the recorder publishes to the exit path (docs/cfi.md): for each
 * process id of the id tables, the map of its modules with compiled DWARF CFI
 * (guestwalk/cfi_unwind.h). The drain thread publishes a new map with a release store; a vCPU
 * loads it with acquire before a user walk of that process. A published map is immutable; one
 * replaced or unpublished is freed only after the exit core's grace (grace.h: no stop that may
 * have loaded it still runs), so the exit path never waits and never frees. */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

#include "guestwalk/cfi_unwind.h"
#include "sampler/exit/id_table.h"

struct exit_cfi_maps {
    _Atomic(const struct gw_cfi_map *) maps[ID_MAX_PROCS];
};

/* Exit path: process `proc`'s current map (acquire), NULL if none (or no maps at all). */
static inline const struct gw_cfi_map *exit_cfi_map(const struct exit_cfi_maps *m, uint32_t proc)
{
    if (!m || proc == 0 || proc > ID_MAX_PROCS)
        return NULL;
    return atomic_load_explicit(&m->maps[proc - 1], memory_order_acquire);
}

/* Drain thread: process `proc`'s current map as it last published it. */
static inline const struct gw_cfi_map *exit_cfi_current(const struct exit_cfi_maps *m,
                                                        uint32_t proc)
{
    return atomic_load_explicit(&m->maps[proc - 1], memory_order_relaxed);
}

/* Drain thread: publish `map` for `proc` (1..ID_MAX_PROCS) with release. */
static inline void exit_cfi_publish(struct exit_cfi_maps *m, uint32_t proc,
                                    const struct gw_cfi_map *map)
{
    atomic_store_explicit(&m->maps[proc - 1], map, memory_order_release);
}
