/* A bounded buffer of the newest FXT records (flight.h). */
#include "fxt/flight.h"

#include <stdlib.h>
#include <string.h>

#define SKIP_TAG  UINT64_MAX /* the rest of the buffer up to its end is unused */
#define TAG_WORDS 2u

int fxt_flight_init(struct fxt_flight *f, uint64_t bytes, uint64_t window,
                    fxt_flight_evict_fn on_evict, void *ctx, struct hv_err *err)
{
    memset(f, 0, sizeof(*f));
    if (bytes < (64u << 10))
        return hv_errf(err, "flight recorder: %llu bytes is less than the 64 KiB it needs",
                       (unsigned long long)bytes);
    f->cap = bytes / 8;
    f->buf = malloc(f->cap * 8);
    if (!f->buf)
        return hv_errf_errno(err, "flight recorder: allocating %llu bytes",
                             (unsigned long long)bytes);
    f->window = window;
    f->on_evict = on_evict;
    f->ctx = ctx;
    return 0;
}

void fxt_flight_destroy(struct fxt_flight *f)
{
    free(f->buf);
    f->buf = NULL;
}

static void tag_read(const struct fxt_flight *f, uint64_t p, struct fxt_flight_record *r)
{
    uint64_t at = p % f->cap;
    r->provider = (uint32_t)f->buf[at];
    r->nwords = (uint32_t)(f->buf[at] >> 32);
    r->ts = f->buf[at + 1];
    r->words = f->buf + at + TAG_WORDS;
}

/* Past a skip tag at the old end, if there is one. */
static void skip_padding(struct fxt_flight *f)
{
    if (f->tail < f->head && f->buf[f->tail % f->cap] == SKIP_TAG)
        f->tail += f->cap - f->tail % f->cap;
}

static void evict_oldest(struct fxt_flight *f)
{
    skip_padding(f);
    if (f->tail >= f->head)
        return;
    struct fxt_flight_record r;
    tag_read(f, f->tail, &r);
    if (f->on_evict)
        f->on_evict(f->ctx, &r);
    f->tail += TAG_WORDS + r.nwords;
    f->records--;
    f->evicted++;
    skip_padding(f);
}

int fxt_flight_push(struct fxt_flight *f, uint32_t provider, uint64_t ts, const uint64_t *words,
                    uint32_t nwords, struct hv_err *err)
{
    if (nwords == 0 || nwords > FXT_FLIGHT_MAX_WORDS)
        return hv_errf(err, "flight recorder: a record of %u words", nwords);
    uint64_t need = TAG_WORDS + nwords; /* <= cap: init asks for 8192 words at least */
    for (;;) {
        if (f->tail == f->head) /* empty: start at the buffer's start, nothing to wrap */
            f->tail = f->head = (f->head + f->cap - 1) / f->cap * f->cap;
        uint64_t to_end = f->cap - f->head % f->cap;
        uint64_t total = need <= to_end ? need : to_end + need;
        if (f->cap - (f->head - f->tail) >= total)
            break;
        evict_oldest(f);
    }
    uint64_t to_end = f->cap - f->head % f->cap;
    if (need > to_end) {
        f->buf[f->head % f->cap] = SKIP_TAG;
        f->head += to_end;
    }
    uint64_t at = f->head % f->cap;
    f->buf[at] = (uint64_t)provider | (uint64_t)nwords << 32;
    f->buf[at + 1] = ts;
    memcpy(f->buf + at + TAG_WORDS, words, (size_t)nwords * 8);
    f->head += need;
    f->records++;
    f->pushed++;
    if (ts > f->newest_ts)
        f->newest_ts = ts;
    /* The time window: what is older than the newest by more than it goes (never the record
     * just pushed). */
    while (f->window && f->records > 1) {
        struct fxt_flight_record r;
        skip_padding(f);
        tag_read(f, f->tail, &r);
        if (r.ts + f->window >= f->newest_ts)
            break;
        evict_oldest(f);
    }
    return 0;
}

bool fxt_flight_next(const struct fxt_flight *f, uint64_t *pos, struct fxt_flight_record *out)
{
    uint64_t p = f->tail + *pos;
    if (p < f->head && f->buf[p % f->cap] == SKIP_TAG)
        p += f->cap - p % f->cap;
    if (p >= f->head)
        return false;
    tag_read(f, p, out);
    *pos = p + TAG_WORDS + out->nwords - f->tail;
    return true;
}

uint64_t fxt_flight_bytes(const struct fxt_flight *f)
{
    return (f->head - f->tail) * 8;
}
