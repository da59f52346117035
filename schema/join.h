/* Joining partial sample records with their completion (RFC-0274's continuation records;
 * docs/fxt-samples.md, "Continuations"): a partial record taken in the guest kernel carries a
 * continuation id; the record that completes it, written when the thread is back in user mode,
 * carries the user stack. Every partial record of an id is joined with the one completion, in
 * file order, and reported once through the caller's callback; what never completes is
 * reported by hvfxt_join_flush() with no user stack.
 *
 * Written by the recorder (sampler/exit/continuation.c), joined here: any reader of recordings
 * (the report's loader) joins the same way. The frames are the caller's (addresses and flags,
 * leaf first); this file only keeps and pairs them.
 *
 * Bounds: a completion finds its partial records in O(1) however many wait (a chain per id);
 * partial records that reach the file after their completion — the drain thread writes vCPU
 * rings one after the other, so another vCPU's earlier partial records can come later — are
 * joined through a direct-mapped table of the last HVFXT_JOIN_RECENT completions (ids are
 * unique in a recording: vCPU << 56 | counter, so a stale slot cannot match a new id). What is
 * kept follows what waits, not the recording's length: an emitted record's slot is taken by the
 * next one, and the ids whose records were all emitted are dropped once they are most. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/hashidx.h"
#include "common/vector.h"

#define HVFXT_JOIN_RECENT 4096

/* One partial record as the caller assembled it. */
struct hvfxt_join_sample {
    uint64_t ts, pid, tid;
    uint64_t cgroup; /* its cgroup field (a group koid), 0: none */
    uint32_t vcpu;
    uint8_t cpl;
    const uint64_t *addr; /* frames, leaf first */
    const uint32_t *flags;
    uint32_t n;
    /* Its last frame is the user pc saved at kernel entry: the completion's first frame (where
     * the thread was when it came back) gives way to it. */
    bool entry_pc;
};

/* A joined sample: the partial record `s` and the user frames to append (n == 0: none, the
 * completion never came). Returns 0, or -1 with err set to stop the join. */
typedef int (*hvfxt_join_fn)(void *ctx, const struct hvfxt_join_sample *s, const uint64_t *addr,
                             const uint32_t *flags, uint32_t n, struct hv_err *err);

struct hvfxt_join_pending;
struct hvfxt_join_chain;
struct hvfxt_join_done;

struct hvfxt_join {
    VECTOR(struct hvfxt_join_pending) pend; /* emitted ones have addr NULL, on the free list */
    uint32_t free_pend;                     /* the first free slot of pend (NONE: none) */
    uint64_t seq;                           /* partial records kept so far (their order) */
    VECTOR(struct hvfxt_join_chain) chains;
    size_t dead_chains;             /* chains with nothing waiting */
    struct hashidx chain_ids;       /* chains by id */
    struct hvfxt_join_done *recent; /* HVFXT_JOIN_RECENT entries */
    hvfxt_join_fn emit;
    void *ctx;
    uint64_t completions; /* completion records seen */
    uint64_t unjoined;    /* partial records flushed without their completion */
};

/* Joined samples go to emit(ctx, ...). -1 when out of memory. */
int hvfxt_join_init(struct hvfxt_join *j, hvfxt_join_fn emit, void *ctx, struct hv_err *err);
void hvfxt_join_free(struct hvfxt_join *j);

/* A partial record of continuation `id`: emitted at once when its completion came earlier
 * (recently), kept until it comes otherwise. */
int hvfxt_join_partial(struct hvfxt_join *j, uint64_t id, const struct hvfxt_join_sample *s,
                       struct hv_err *err);

/* The completion of `id` with the user frames (the first is the interrupted user pc): every
 * partial record of it kept so far is emitted, in file order. */
int hvfxt_join_complete(struct hvfxt_join *j, uint64_t id, const uint64_t *addr,
                        const uint32_t *flags, uint32_t n, struct hv_err *err);

/* The end of the recording: partial records whose completion never came, in file order, with
 * no user frames (they keep their kernel part). */
int hvfxt_join_flush(struct hvfxt_join *j, struct hv_err *err);
