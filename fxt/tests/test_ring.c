/* The SPSC ring: framing, wrap-around, drop policy, loss records written by the user's encoder,
 * and a two-thread run where written + dropped = produced and order is kept. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/encode.h"
#include "fxt/reader.h"
#include "fxt/ring.h"

/* Test records: a blob of type 1 whose first payload word is a sequence number, `words` words in
 * all; loss records: a blob of type 2 with (ring id, dropped, first ts, last ts). */
#define LOSS_WORDS 5
static size_t enc_loss(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l)
{
    uint64_t payload[4] = {l->ring_id, l->dropped, l->first_ts, l->last_ts};
    return fxt_enc_blob(buf, cap, fxt_str_inline(NULL), 2, payload, sizeof(payload));
}

static size_t enc_seq(uint64_t *buf, size_t cap, uint64_t seq, uint32_t words)
{
    static const uint64_t zeros[64];
    assert_true(words >= 2 && words - 2 <= 64);
    uint64_t payload[65];
    payload[0] = seq;
    memcpy(payload + 1, zeros, 8 * (size_t)(words - 2));
    return fxt_enc_blob(buf, cap, fxt_str_inline(NULL), 1, payload, 8 * (size_t)(words - 1));
}

static int ring_init(struct fxt_ring *r, uint64_t cap, uint32_t id)
{
    struct hv_err err;
    return fxt_ring_init(r, cap, id, enc_loss, LOSS_WORDS, &err);
}

/* A record of 4 words, or 5 + pad words when pad > 0 (the sizes the sampler's records vary by). */
static bool push_seq(struct fxt_ring *r, uint64_t seq, uint32_t pad)
{
    uint32_t n = 4 + (pad ? 1 + pad : 0);
    uint64_t *p = fxt_ring_reserve(r, n, seq);
    if (!p)
        return false;
    assert_int_equal(enc_seq(p, n, seq, n), n);
    fxt_ring_commit(r, n);
    return true;
}

/* Decode one record popped from the ring with the independent reader (prefixed by a minimal
 * valid header so the reader accepts it). */
struct popped {
    int kind; /* 1 sequence record, 2 loss */
    uint64_t seq, dropped, first, last, id;
};
static struct popped decode(const uint64_t *rec, uint32_t n)
{
    static uint64_t buf[8 + 4096];
    size_t k = fxt_enc_magic(buf, 8);
    k += fxt_enc_provider_info(buf + k, 8, 1, "v", 1);
    k += fxt_enc_provider_section(buf + k, 8, 1);
    k += fxt_enc_init(buf + k, 8, 1000);
    memcpy(buf + k, rec, 8 * (size_t)n);
    struct fxtr_reader rd;
    static struct fxtr_record x;
    struct hv_err err;
    struct popped out = {0};
    fxtr_init(&rd, buf, 8 * (k + n));
    for (int i = 0; i < 5; i++)
        if (fxtr_next(&rd, &x, &err) != 1)
            fail_msg("%s", err.msg);
    assert_int_equal(x.type, FXTR_BLOB);
    uint64_t w[4] = {0};
    memcpy(w, x.u.blob.payload, x.u.blob.size < 32 ? x.u.blob.size : 32);
    if (x.u.blob.btype == 1) {
        out.kind = 1;
        out.seq = w[0];
    } else if (x.u.blob.btype == 2) {
        out = (struct popped){.kind = 2, .id = w[0], .dropped = w[1], .first = w[2], .last = w[3]};
    }
    assert_int_equal(fxtr_next(&rd, &x, &err), 0);
    fxtr_free(&rd);
    return out;
}

static void test_init_limits(void **state)
{
    struct fxt_ring r;
    struct hv_err err;
    assert_int_equal(ring_init(&r, 5000, 0), -1);
    assert_int_equal(ring_init(&r, 2048, 0), -1);
    assert_int_equal(fxt_ring_init(&r, 4096, 0, NULL, LOSS_WORDS, &err), -1);
    assert_int_equal(fxt_ring_init(&r, 4096, 0, enc_loss, 4096, &err), -1);
    assert_int_equal(ring_init(&r, 4096, 0), 0);
    assert_null(fxt_ring_reserve(&r, 4096, 1)); /* over the FXT record limit */
    assert_null(fxt_ring_reserve(&r, 0, 2));
    assert_int_equal(fxt_ring_dropped_total(&r), 2);
    assert_true(((uintptr_t)&r.head / 64) != ((uintptr_t)&r.tail / 64)); /* separate lines */
    fxt_ring_destroy(&r);
}

static void test_fill_drop_loss_wrap(void **state)
{
    struct fxt_ring r;
    uint64_t out[4096];
    assert_int_equal(ring_init(&r, 4096, 3), 0);
    /* 6-word records (1 kernel frame) do not divide 4096: the ring must pad at the end. */
    uint64_t seq = 0, accepted = 0;
    while (push_seq(&r, seq, 1)) {
        seq++;
        accepted++;
    }
    assert_int_equal(accepted, 4096 / 6); /* 6 words each, 4 left over */
    /* Three more drops, then drain half. */
    assert_false(push_seq(&r, ++seq, 1));
    assert_false(push_seq(&r, ++seq, 1));
    assert_int_equal(fxt_ring_dropped_total(&r), 3);
    uint64_t expect = 0;
    for (int i = 0; i < 400; i++) {
        long n = fxt_ring_pop(&r, out, 4096);
        assert_int_equal(n, 6);
        struct popped p = decode(out, (uint32_t)n);
        assert_int_equal(p.kind, 1);
        assert_int_equal(p.seq, expect++);
    }
    /* The next accepted record is preceded by a loss record covering seq 682..684. */
    assert_true(push_seq(&r, ++seq, 1));
    uint64_t first_after_loss = seq;
    while (push_seq(&r, ++seq, 1))
        ;
    for (;;) {
        long n = fxt_ring_pop(&r, out, 4096);
        if (n == 0)
            break;
        assert_true(n > 0);
        struct popped p = decode(out, (uint32_t)n);
        if (expect == 682) {
            assert_int_equal(p.kind, 2);
            assert_int_equal(p.dropped, 3);
            assert_int_equal(p.id, 3);
            assert_int_equal(p.first, 682);
            assert_int_equal(p.last, 684);
            expect = first_after_loss;
            continue;
        }
        assert_int_equal(p.kind, 1);
        assert_int_equal(p.seq, expect++);
    }
    assert_int_equal(expect, seq); /* the last push failed: it is pending */
    struct fxt_ring_loss l;
    assert_true(fxt_ring_take_pending_loss(&r, &l));
    assert_true(l.dropped == 1 && l.first_ts == seq && l.last_ts == seq && l.ring_id == 3);
    assert_false(fxt_ring_take_pending_loss(&r, &l));

    /* A reservation committed shorter than reserved, and pop into a too-small buffer. */
    uint64_t *p = fxt_ring_reserve(&r, 100, 0);
    assert_non_null(p);
    assert_int_equal(enc_seq(p, 100, 77, 3), 3);
    fxt_ring_commit(&r, 3);
    assert_int_equal(fxt_ring_pop(&r, out, 2), -3);
    assert_int_equal(fxt_ring_pop(&r, out, 3), 3);
    assert_int_equal(decode(out, 3).seq, 77);
    assert_int_equal(fxt_ring_pop(&r, out, 3), 0);
    fxt_ring_destroy(&r);
}

static void test_overcommit_never_runs_past_head(void **state)
{
    /* A producer bug (committing words it did not write) must not send the consumer past the
     * committed words: the zero words look like padding, and the skip is clamped to the head. */
    struct fxt_ring r;
    uint64_t out[16];
    assert_int_equal(ring_init(&r, 4096, 0), 0);
    uint64_t *p = fxt_ring_reserve(&r, 10, 0);
    assert_int_equal(enc_seq(p, 10, 5, 3), 3);
    fxt_ring_commit(&r, 10);
    assert_int_equal(fxt_ring_pop(&r, out, 16), 3);
    assert_int_equal(fxt_ring_pop(&r, out, 16), 0);
    assert_true(atomic_load(&r.tail) == atomic_load(&r.head));
    assert_true(push_seq(&r, 6, 0));
    assert_int_equal(fxt_ring_pop(&r, out, 16), 4);
    assert_int_equal(decode(out, 4).seq, 6);
    fxt_ring_destroy(&r);
}

struct run {
    struct fxt_ring ring;
    uint64_t produced, pushed_ok;
    _Atomic int done;
};

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *producer(void *arg)
{
    struct run *run = arg;
    uint64_t s = 0x12345;
    for (uint64_t seq = 0; seq < run->produced; seq++) {
        /* variable sizes exercise the wrap padding */
        if (push_seq(&run->ring, seq, (uint32_t)(rng(&s) % 8)))
            run->pushed_ok++;
        if (rng(&s) % 1024 == 0)
            sched_yield();
    }
    atomic_store(&run->done, 1);
    return NULL;
}

static void test_two_threads(void **state)
{
    static struct run run;
    memset(&run, 0, sizeof(run));
    run.produced = 2000000;
    assert_int_equal(ring_init(&run.ring, 4096, 0), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, producer, &run), 0);
    uint64_t got = 0, dropped = 0, loss_records = 0, next = 0, s = 99;
    uint64_t pending_first = UINT64_MAX, pending_last = 0, pending_n = 0;
    static uint64_t out[4096];
    for (;;) {
        int finished = atomic_load(&run.done);
        long n = fxt_ring_pop(&run.ring, out, 4096);
        assert_true(n >= 0);
        if (n == 0) {
            if (finished)
                break;
            if (rng(&s) % 4 == 0)
                sched_yield();
            continue;
        }
        /* a slow consumer now and then, so drops happen */
        if (rng(&s) % 20000 == 0)
            for (volatile int i = 0; i < 200000; i++)
                ;
        struct popped p = decode(out, (uint32_t)n);
        if (p.kind == 2) {
            /* the loss record names exactly the gap before the next sample */
            assert_int_equal(p.first, next);
            pending_first = p.first;
            pending_last = p.last;
            pending_n = p.dropped;
            dropped += p.dropped;
            loss_records++;
            continue;
        }
        assert_int_equal(p.kind, 1);
        if (pending_n) {
            assert_int_equal(pending_last + 1, p.seq);
            assert_int_equal(p.seq - pending_first, pending_n);
            pending_n = 0;
        } else {
            assert_int_equal(p.seq, next); /* order kept, nothing silently missing */
        }
        next = p.seq + 1;
        got++;
    }
    pthread_join(t, NULL);
    struct fxt_ring_loss l;
    if (fxt_ring_take_pending_loss(&run.ring, &l)) {
        assert_int_equal(l.first_ts, next);
        assert_int_equal(l.last_ts, run.produced - 1);
        dropped += l.dropped;
    }
    assert_int_equal(got, run.pushed_ok);
    assert_int_equal(got + dropped, run.produced);
    assert_int_equal(dropped, fxt_ring_dropped_total(&run.ring));
    print_message("ring: %llu produced, %llu written, %llu dropped in %llu loss records\n",
                  (unsigned long long)run.produced, (unsigned long long)got,
                  (unsigned long long)dropped, (unsigned long long)loss_records);
    fxt_ring_destroy(&run.ring);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_limits),
        cmocka_unit_test(test_fill_drop_loss_wrap),
        cmocka_unit_test(test_overcommit_never_runs_past_head),
        cmocka_unit_test(test_two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
