/* Per-vCPU SPSC ring of FXT records (see ring.h for the protocol). */
#include "fxt/ring.h"

#include <stdlib.h>
#include <string.h>

#include "fxt/fields.h"

int fxt_ring_init(struct fxt_ring *r, uint64_t capacity_words, uint32_t id,
                  fxt_ring_loss_encoder encode_loss, uint32_t loss_words, struct hv_err *err)
{
    memset(r, 0, sizeof(*r));
    if (!encode_loss || loss_words == 0 || loss_words > FXT_MAX_RECORD_WORDS)
        return hv_errf(err, "fxt ring: no loss-record encoder, or a size out of 1..4095");
    /* The producer reserves loss_words in front of a record and the consumer frames by the
     * headers: an encoder that writes any other size would break the framing. Check it once. */
    uint64_t probe[FXT_MAX_RECORD_WORDS];
    struct fxt_ring_loss l = {.ring_id = id, .dropped = 1, .first_ts = 1, .last_ts = 1};
    if (encode_loss(probe, loss_words, &l) != loss_words)
        return hv_errf(err, "fxt ring: the loss encoder does not write exactly %u words",
                       loss_words);
    if (capacity_words < 4096 || (capacity_words & (capacity_words - 1)) ||
        capacity_words > (1ull << 40))
        return hv_errf(err, "fxt ring: capacity %llu words is not a power of two >= 4096",
                       (unsigned long long)capacity_words);
    r->buf = aligned_alloc(FXT_CACHELINE, capacity_words * 8);
    if (!r->buf)
        return hv_errf_errno(err, "fxt ring: allocating %llu words",
                             (unsigned long long)capacity_words);
    /* Touch every page now so the vCPU thread never takes a page fault on first use. */
    memset(r->buf, 0, capacity_words * 8);
    r->cap = capacity_words;
    r->mask = capacity_words - 1;
    r->id = id;
    r->encode_loss = encode_loss;
    r->loss_words = loss_words;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->dropped_total, 0);
    return 0;
}

void fxt_ring_destroy(struct fxt_ring *r)
{
    free(r->buf);
    r->buf = NULL;
}

static void ring_drop(struct fxt_ring *r, uint64_t ts)
{
    if (r->pend_dropped == 0)
        r->pend_first_ts = ts;
    r->pend_last_ts = ts;
    r->pend_dropped++;
    /* Only the producer writes it: a relaxed load+store is enough (no locked instruction). */
    atomic_store_explicit(&r->dropped_total,
                          atomic_load_explicit(&r->dropped_total, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static bool ring_has_room(struct fxt_ring *r, uint64_t head, uint64_t need)
{
    if (head + need - r->tail_cache <= r->cap)
        return true;
    r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
    return head + need - r->tail_cache <= r->cap;
}

uint64_t *fxt_ring_reserve(struct fxt_ring *r, uint32_t nwords, uint64_t ts)
{
    if (nwords == 0 || nwords > FXT_MAX_RECORD_WORDS) {
        ring_drop(r, ts);
        return NULL;
    }
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t extra = r->pend_dropped ? r->loss_words : 0;
    uint64_t total = nwords + extra;
    uint64_t pos = head & r->mask;
    uint64_t contig = r->cap - pos;
    uint64_t pad = total > contig ? contig : 0;
    if (!ring_has_room(r, head, pad + total)) {
        ring_drop(r, ts);
        return NULL;
    }
    if (pad) {
        r->buf[pos] = 0; /* "skip to the start": no FXT record header is 0 */
        head += pad;
    }
    uint64_t *p = &r->buf[head & r->mask];
    if (extra) {
        struct fxt_ring_loss l = {.ring_id = r->id,
                                  .dropped = r->pend_dropped,
                                  .first_ts = r->pend_first_ts,
                                  .last_ts = r->pend_last_ts};
        r->encode_loss(p, r->loss_words, &l);
        r->pend_dropped = 0;
        p += extra;
    }
    r->res_start = head + extra;
    return p;
}

void fxt_ring_commit(struct fxt_ring *r, uint32_t nwords)
{
    atomic_store_explicit(&r->head, r->res_start + nwords, memory_order_release);
}

const uint64_t *fxt_ring_peek(struct fxt_ring *r, uint32_t *nwords)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    for (;;) {
        if (tail == r->head_cache) {
            r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
            if (tail == r->head_cache)
                return NULL;
        }
        uint64_t pos = tail & r->mask;
        uint64_t w = r->buf[pos];
        if (w == 0) {
            /* Padding always runs to the end of the buffer and is followed by committed words;
             * anything else means the producer committed words it did not write. */
            uint64_t skip = r->cap - pos;
            tail = skip < r->head_cache - tail ? tail + skip : r->head_cache;
            atomic_store_explicit(&r->tail, tail, memory_order_release);
            continue;
        }
        uint64_t n = FXT_GET(FXT_REC_SIZE, w); /* no ring record is a large record (type 15) */
        if (n == 0 || n > r->head_cache - tail || n > r->cap - pos) {
            /* The producer committed something that is not FXT: never loop or read past the
             * committed words; discard up to the head. */
            atomic_store_explicit(&r->tail, r->head_cache, memory_order_release);
            return NULL;
        }
        *nwords = (uint32_t)n;
        return &r->buf[pos];
    }
}

void fxt_ring_release(struct fxt_ring *r, uint32_t nwords)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_store_explicit(&r->tail, tail + nwords, memory_order_release);
}

long fxt_ring_pop(struct fxt_ring *r, uint64_t *out, size_t cap)
{
    uint32_t n;
    const uint64_t *p = fxt_ring_peek(r, &n);
    if (!p)
        return 0;
    if (n > cap)
        return -(long)n;
    memcpy(out, p, 8 * (size_t)n);
    fxt_ring_release(r, n);
    return n;
}

uint64_t fxt_ring_dropped_total(const struct fxt_ring *r)
{
    return atomic_load_explicit(&((struct fxt_ring *)r)->dropped_total, memory_order_relaxed);
}

bool fxt_ring_take_pending_loss(struct fxt_ring *r, struct fxt_ring_loss *out)
{
    if (!r->pend_dropped)
        return false;
    *out = (struct fxt_ring_loss){.ring_id = r->id,
                                  .dropped = r->pend_dropped,
                                  .first_ts = r->pend_first_ts,
                                  .last_ts = r->pend_last_ts};
    r->pend_dropped = 0;
    return true;
}
