/* common/hashidx.h: every inserted index found again through growth, equal hashes told apart by
 * the caller's equality, absent keys not found, the load factor kept at or below 1/2, and FNV-1a
 * pinned to its published test values (the FNV reference, draft-eastlake-fnv, "a" and
 * "foobar"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/hashidx.h"

struct keys {
    const uint64_t *v;
    uint64_t want;
};

static bool key_eq(const void *ctx, uint32_t idx)
{
    const struct keys *k = ctx;
    return k->v[idx] == k->want;
}

static void test_insert_find(void **state)
{
    (void)state;
    enum { N = 10000 };
    static uint64_t v[N];
    struct hashidx h;
    hashidx_init(&h);
    struct keys k = {v, 0};
    assert_int_equal(hashidx_find(&h, 1, key_eq, &k), HASHIDX_NONE); /* empty table */
    for (uint32_t i = 0; i < N; i++) {
        v[i] = 0x400000 + 16ull * i; /* addresses: only low bits differ */
        assert_int_equal(hashidx_insert(&h, hashidx_u64(HASHIDX_SEED, v[i]), i), 0);
        assert_true(h.n * 2 <= h.cap);
    }
    assert_int_equal(h.n, N);
    assert_int_equal(h.cap, 32768); /* 64 doubled until 2 * 10000 fit */
    for (uint32_t i = 0; i < N; i++) {
        k.want = v[i];
        assert_int_equal(hashidx_find(&h, hashidx_u64(HASHIDX_SEED, v[i]), key_eq, &k), i);
    }
    k.want = 0x400008;
    assert_int_equal(hashidx_find(&h, hashidx_u64(HASHIDX_SEED, k.want), key_eq, &k),
                     HASHIDX_NONE);
    hashidx_free(&h);
    assert_int_equal(h.cap, 0);
    assert_null(h.idx);
}

static void test_equal_hashes(void **state)
{
    (void)state;
    /* Every key under one hash: the probe sequence and the caller's equality decide. */
    static const uint64_t v[] = {5, 6, 7, 8, 9};
    struct hashidx h;
    hashidx_init(&h);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(hashidx_insert(&h, 42, i), 0);
    struct keys k = {v, 0};
    for (uint32_t i = 0; i < 5; i++) {
        k.want = v[i];
        assert_int_equal(hashidx_find(&h, 42, key_eq, &k), i);
    }
    k.want = 10;
    assert_int_equal(hashidx_find(&h, 42, key_eq, &k), HASHIDX_NONE);
    k.want = 5;
    assert_int_equal(hashidx_find(&h, 43, key_eq, &k), HASHIDX_NONE); /* another hash */
    hashidx_free(&h);
}

static void test_fnv1a(void **state)
{
    (void)state;
    assert_int_equal(hashidx_bytes(HASHIDX_SEED, "", 0), 0xcbf29ce484222325ull);
    assert_int_equal(hashidx_bytes(HASHIDX_SEED, "a", 1), 0xaf63dc4c8601ec8cull);
    assert_int_equal(hashidx_bytes(HASHIDX_SEED, "foobar", 6), 0x85944171f73967e8ull);
    /* Continued: hashing in two pieces equals hashing at once. */
    assert_int_equal(hashidx_bytes(hashidx_bytes(HASHIDX_SEED, "foo", 3), "bar", 3),
                     0x85944171f73967e8ull);
    assert_int_not_equal(hashidx_u64(HASHIDX_SEED, 1), hashidx_u64(HASHIDX_SEED, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_insert_find),
        cmocka_unit_test(test_equal_hashes),
        cmocka_unit_test(test_fnv1a),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
