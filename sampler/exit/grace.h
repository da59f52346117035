/* When nothing the exit path may hold is in use any more (docs/identities.md): each vCPU's exit
 * handler counts up once as it begins its work on the tables and published maps (odd: inside)
 * and once as it ends. The drain thread, having ended identities or unpublished a map, notes
 * the counters (exit_grace_mark); once every vCPU that was inside then has moved on
 * (exit_grace_over), no exit can still use an old id's slot or the old map, and the drain
 * thread gives them back. The exit path pays two atomic adds per stop and never waits. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler/exit/core.h"

static inline void exit_grace_enter(struct exit_vcpu *sv)
{
    /* Sequentially consistent: ordered before this stop's loads of keys and maps, against the
     * drain thread's end-then-mark. */
    atomic_fetch_add_explicit(&sv->grace_seq, 1, memory_order_seq_cst);
}

static inline void exit_grace_leave(struct exit_vcpu *sv)
{
    atomic_fetch_add_explicit(&sv->grace_seq, 1, memory_order_release);
}

/* Drain thread: the counters now, into mark[nvcpus]. */
static inline void exit_grace_mark(const struct exit_core *core, uint64_t *mark)
{
    for (unsigned i = 0; i < core->nvcpus; i++)
        mark[i] = atomic_load_explicit(&core->v[i].grace_seq, memory_order_seq_cst);
}

/* Drain thread: whether every stop under way at the mark has ended. */
static inline bool exit_grace_over(const struct exit_core *core, const uint64_t *mark)
{
    for (unsigned i = 0; i < core->nvcpus; i++)
        if ((mark[i] & 1) &&
            atomic_load_explicit(&core->v[i].grace_seq, memory_order_acquire) == mark[i])
            return false;
    return true;
}
