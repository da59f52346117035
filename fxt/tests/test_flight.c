/* The flight recorder's buffer: whole records kept with their provider and timestamp, the oldest
 * evicted first and reported, a record that would wrap placed at the start, a time window, and
 * exact sizes (each record costs its words and a 2-word tag). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/flight.h"

struct evicted {
    unsigned n;
    uint64_t ts[4096];
    uint32_t provider[4096];
};

static void count(void *ctx, const struct fxt_flight_record *r)
{
    struct evicted *e = ctx;
    /* The record is whole when it goes: its first word is what was pushed. */
    assert_int_equal(r->words[0], r->ts * 1000 + r->nwords);
    if (e->n < 4096) {
        e->provider[e->n] = r->provider;
        e->ts[e->n] = r->ts;
    }
    e->n++;
}

static void push(struct fxt_flight *f, uint32_t provider, uint64_t ts, uint32_t nwords)
{
    static uint64_t w[FXT_FLIGHT_MAX_WORDS];
    for (uint32_t i = 0; i < nwords; i++)
        w[i] = ts * 1000 + nwords + i;
    struct hv_err err = {0};
    assert_int_equal(fxt_flight_push(f, provider, ts, w, nwords, &err), 0);
}

static void test_size_bound(void **state)
{
    (void)state;
    static struct evicted e;
    memset(&e, 0, sizeof(e));
    struct fxt_flight f;
    struct hv_err err = {0};
    assert_int_equal(fxt_flight_init(&f, 32 << 10, 0, count, &e, &err), -1);
    assert_non_null(strstr(err.msg, "64 KiB"));
    assert_int_equal(fxt_flight_init(&f, 64 << 10, 0, count, &e, &err), 0); /* 8192 words */
    /* 100-word records cost 102: 80 fit (8160 words), the 81st evicts the first. */
    for (uint64_t ts = 1; ts <= 80; ts++)
        push(&f, (uint32_t)(ts % 3), ts, 100);
    assert_int_equal(f.records, 80);
    assert_int_equal(fxt_flight_bytes(&f), 80 * 102 * 8);
    assert_int_equal(e.n, 0);
    push(&f, 0, 81, 100);
    assert_int_equal(e.n, 1);
    assert_int_equal(e.ts[0], 1);
    assert_int_equal(e.provider[0], 1);
    /* It wrapped: 32 words were left at the end; it sits at the start. Oldest first still. */
    uint64_t pos = 0, want = 2;
    struct fxt_flight_record r;
    while (fxt_flight_next(&f, &pos, &r)) {
        assert_int_equal(r.ts, want);
        assert_int_equal(r.provider, want % 3);
        assert_int_equal(r.nwords, 100);
        for (uint32_t i = 0; i < 100; i++)
            assert_int_equal(r.words[i], want * 1000 + 100 + i);
        want++;
    }
    assert_int_equal(want, 82);
    /* A record as large as any: it takes what it needs, oldest first. */
    push(&f, 2, 82, FXT_FLIGHT_MAX_WORDS);
    assert_int_equal(e.n, 1 + 41); /* 4097 words: 41 records of 102 */
    for (unsigned i = 0; i < e.n; i++)
        assert_int_equal(e.ts[i], i + 1);
    assert_int_equal(f.evicted, 42);
    assert_int_equal(f.pushed, 82);
    assert_true(fxt_flight_bytes(&f) <= 64 << 10);
    assert_int_equal(fxt_flight_push(&f, 0, 83, NULL, FXT_FLIGHT_MAX_WORDS + 1, &err), -1);
    /* A long run stays within the buffer, every push accounted for. */
    for (uint64_t ts = 100; ts < 100000; ts++)
        push(&f, 1, ts, (uint32_t)(1 + ts % 300));
    assert_true(fxt_flight_bytes(&f) <= 64 << 10);
    assert_int_equal(f.pushed - f.evicted, f.records);
    fxt_flight_destroy(&f);
}

static void test_time_window(void **state)
{
    (void)state;
    static struct evicted e;
    memset(&e, 0, sizeof(e));
    struct fxt_flight f;
    struct hv_err err = {0};
    assert_int_equal(fxt_flight_init(&f, 1 << 20, 10, count, &e, &err), 0);
    for (uint64_t ts = 1; ts <= 30; ts++)
        push(&f, 0, ts, 4);
    /* Kept: ts 20..30 (the newest minus 10 and newer). */
    assert_int_equal(f.records, 11);
    assert_int_equal(e.n, 19);
    uint64_t pos = 0;
    struct fxt_flight_record r;
    assert_true(fxt_flight_next(&f, &pos, &r));
    assert_int_equal(r.ts, 20);
    /* One late record far ahead: everything before it goes, never itself. */
    push(&f, 0, 1000, 4);
    assert_int_equal(f.records, 1);
    fxt_flight_destroy(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_bound),
        cmocka_unit_test(test_time_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
