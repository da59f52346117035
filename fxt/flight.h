/* A flight recorder's memory: the newest FXT records of several providers in one bounded buffer,
 * the oldest overwritten first (perf's `--overwrite`, Perfetto's RING_BUFFER). A record is kept
 * whole with its provider and a timestamp; a push that does not fit evicts records from the old
 * end until it does, and so does a time window: with `window` set, records more than `window`
 * ticks older than the newest pushed are evicted too. Every eviction is reported to the owner's
 * callback, which counts them (hvprof: per vCPU, written into the snapshot), so an overwrite is
 * never silent.
 *
 * What may be evicted is the caller's choice: definitions that later records refer to (FXT
 * string and thread records, names) must not go here. One thread owns a buffer: no locking.
 * The memory is allocated once at init; pushing never allocates. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct fxt_flight_record {
    uint32_t provider;
    uint32_t nwords;
    uint64_t ts;
    const uint64_t *words; /* valid until the next push */
};

/* Called for each record the buffer evicts, oldest first, before it is overwritten. */
typedef void (*fxt_flight_evict_fn)(void *ctx, const struct fxt_flight_record *r);

struct fxt_flight {
    uint64_t *buf;
    uint64_t cap; /* words */
    /* Entries occupy [tail, head) of a circular buffer, as monotonic word counts (mod cap for
     * the position). Each is a 2-word tag (provider | nwords << 32, ts) and the record; one that
     * would wrap is placed at the start, the end left as a skip tag. */
    uint64_t head, tail;
    uint64_t window; /* ticks; 0: no time bound */
    uint64_t newest_ts;
    uint64_t records;                        /* held now */
    uint64_t pushed, evicted; /* since init */
    fxt_flight_evict_fn on_evict;
    void *ctx;
};

/* `bytes`: the buffer's size (at least 64 KiB); `window`: ticks kept, 0 for size only. */
int fxt_flight_init(struct fxt_flight *f, uint64_t bytes, uint64_t window,
                    fxt_flight_evict_fn on_evict, void *ctx, struct hv_err *err);
void fxt_flight_destroy(struct fxt_flight *f);

/* Copy one record in, evicting what it needs. nwords 1..FXT_FLIGHT_MAX_WORDS. Returns 0, or -1
 * (err) for a record larger than the buffer can ever hold. */
#define FXT_FLIGHT_MAX_WORDS 4095u
int fxt_flight_push(struct fxt_flight *f, uint32_t provider, uint64_t ts, const uint64_t *words,
                    uint32_t nwords, struct hv_err *err);

/* Oldest to newest: *pos starts at 0; returns false after the newest. No push in between. */
bool fxt_flight_next(const struct fxt_flight *f, uint64_t *pos, struct fxt_flight_record *out);

/* Bytes held now (tags included). */
uint64_t fxt_flight_bytes(const struct fxt_flight *f);
