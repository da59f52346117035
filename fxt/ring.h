/* Per-vCPU single-producer single-consumer ring of FXT records.
 *
 * The vCPU thread (producer) reserves a contiguous slot, encodes one or more complete FXT records
 * into it and commits; nothing is visible to the consumer before the commit, so a record is never
 * half-visible. Producer and consumer never lock, allocate or make system calls after init.
 * The record framing is FXT's own: the consumer reads each record's size from its header word
 * (bits [4..15]); a zero word marks "padding to the end of the buffer" (no FXT record has size 0).
 *
 * When the ring is full the new record is dropped and counted (RFC-0274's policy: keep the old,
 * drop the new). Loss is never silent: the producer remembers how many records it dropped and the
 * timestamps of the first and the last, and the next time a reservation succeeds it writes a loss
 * record in front of the new record, so the loss sits in the stream exactly where the gap is.
 * What a loss record looks like is the user's schema, not the ring's: the ring is given an
 * encoder of a fixed size (hvprof's is hvfxt_enc_loss, schema/encode.h). Drops that are still
 * pending when the producer stops are taken by the consumer with fxt_ring_take_pending_loss()
 * (fxt_writer_drain_ring(..., final=true) does it).
 *
 * Producer and consumer indexes live on separate cache lines. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define FXT_CACHELINE 64

/* Records dropped by one ring between two loss records. */
struct fxt_ring_loss {
    uint32_t ring_id; /* the id given to fxt_ring_init (hvprof: the vCPU index) */
    uint64_t dropped, first_ts, last_ts;
};
/* Encodes one loss record of exactly the size given to fxt_ring_init into buf; returns it, or 0
 * if cap is too small. Called on the producer's thread: same rules as the FXT encoders. */
typedef size_t (*fxt_ring_loss_encoder)(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l);

struct fxt_ring {
    /* read-only after init */
    uint64_t *buf;
    uint64_t cap; /* words, power of two */
    uint64_t mask;
    uint32_t id;
    fxt_ring_loss_encoder encode_loss;
    uint32_t loss_words;

    /* producer line */
    _Alignas(FXT_CACHELINE) _Atomic uint64_t head; /* published end of committed words */
    uint64_t res_start;  /* start of the current reservation (producer-private) */
    uint64_t tail_cache; /* producer's last view of tail */
    uint64_t pend_dropped, pend_first_ts, pend_last_ts; /* drops not yet reported */
    _Atomic uint64_t dropped_total;                     /* statistics, monotonic */

    /* consumer line */
    _Alignas(FXT_CACHELINE) _Atomic uint64_t tail;
    uint64_t head_cache;
};

/* capacity_words: a power of two >= 4096 (so any record fits). `id` goes into the loss records;
 * `encode_loss` writes them, `loss_words` (1..4095) words each. */
int fxt_ring_init(struct fxt_ring *r, uint64_t capacity_words, uint32_t id,
                  fxt_ring_loss_encoder encode_loss, uint32_t loss_words, struct hv_err *err);
void fxt_ring_destroy(struct fxt_ring *r);

/* Producer. Returns `nwords` contiguous words, or NULL when they do not fit (the record is then
 * dropped and counted with timestamp `ts`). nwords must be 1..4095. */
uint64_t *fxt_ring_reserve(struct fxt_ring *r, uint32_t nwords, uint64_t ts);
/* Publish the reservation: `nwords` (<= the reserved size) words of complete FXT records. */
void fxt_ring_commit(struct fxt_ring *r, uint32_t nwords);

/* Consumer. The next committed record (pointer into the ring, *nwords its size), or NULL if the
 * ring is empty. The record stays valid until fxt_ring_release(). */
const uint64_t *fxt_ring_peek(struct fxt_ring *r, uint32_t *nwords);
void fxt_ring_release(struct fxt_ring *r, uint32_t nwords);
/* Copy the next record into out (cap words) and release it; returns its size, 0 if empty,
 * or the (negative) size needed if cap is too small. */
long fxt_ring_pop(struct fxt_ring *r, uint64_t *out, size_t cap);

/* Statistics, readable from any thread. */
uint64_t fxt_ring_dropped_total(const struct fxt_ring *r);

/* Consumer, only once the producer has stopped for good: drops not yet written as a loss record.
 * Returns true and fills *out (and resets the count) if there were any. */
bool fxt_ring_take_pending_loss(struct fxt_ring *r, struct fxt_ring_loss *out);
