/* Per-provider string and thread interning, owned by one producer (one vCPU's encoder state, or
 * the control side for provider 0). Tables are allocated once at init; lookups never allocate.
 * The FXT index spaces are 1..0x7fff for strings and 1..0xff for threads (FXT spec "String
 * record", 1.6); when a table (or its byte pool) is full the caller gets an inline reference
 * instead, which every reader accepts, so interning can never fail a record. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "fxt/encode.h"

struct fxt_intern_str_slot {
    uint32_t off; /* into pool */
    uint16_t len;
    uint16_t index; /* 0 = empty slot */
};
struct fxt_intern_thr_slot {
    uint64_t pid, tid;
    uint8_t index; /* 0 = empty */
};

struct fxt_intern {
    struct fxt_intern_str_slot *strs; /* open addressing, str_slots entries (power of two) */
    uint32_t str_slots, str_max, str_count;
    char *pool;
    uint32_t pool_size, pool_used;
    struct fxt_intern_thr_slot thr[512]; /* open addressing; at most 255 used */
    uint32_t thr_max, thr_count;
};

/* max_strings <= 0x7fff, max_threads <= 0xff, pool_bytes: total interned string bytes. */
int fxt_intern_init(struct fxt_intern *t, uint32_t max_strings, uint32_t max_threads,
                    uint32_t pool_bytes, struct hv_err *err);
void fxt_intern_destroy(struct fxt_intern *t);

/* The reference to use for `s`. When `s` is new and fits, a string record registering it is
 * written to buf and *nwords set to its size (else 0); the record must reach the file before
 * the record that uses the reference, in the same provider. If the table is full or buf too
 * small, an inline reference is returned and nothing is written. */
struct fxt_str fxt_intern_str(struct fxt_intern *t, const char *s, size_t len, uint64_t *buf,
                              size_t cap, size_t *nwords);
/* Same for a (pid, tid) pair: a thread record is written on first use. */
struct fxt_thread fxt_intern_thread(struct fxt_intern *t, uint64_t pid, uint64_t tid, uint64_t *buf,
                                    size_t cap, size_t *nwords);
