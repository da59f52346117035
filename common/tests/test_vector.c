/* common/vector.h: growth by doubling from VEC_MIN_CAP, values kept across growth, struct
 * elements, reserve without adding, overflowing sizes refused with the array untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/vector.h"

static void test_append_grow(void **state)
{
    (void)state;
    VECTOR(uint64_t) a = {0};
    assert_true(vec_append(&a, 7));
    assert_int_equal(a.n, 1);
    assert_int_equal(a.cap, VEC_MIN_CAP);
    for (uint64_t i = 1; i < 1000; i++)
        assert_true(vec_append(&a, i * 3));
    assert_int_equal(a.n, 1000);
    assert_int_equal(a.cap, 1024); /* 16 doubled six times */
    assert_int_equal(a.v[0], 7);
    for (uint64_t i = 1; i < 1000; i++)
        assert_int_equal(a.v[i], i * 3);
    vec_free(&a);
    assert_null(a.v);
    assert_int_equal(a.n, 0);
    assert_int_equal(a.cap, 0);
}

struct pair {
    uint32_t key;
    char name[12];
};
struct pairs {
    VECTOR_FIELDS(struct pair);
};

static void test_push_struct(void **state)
{
    (void)state;
    struct pairs p = {0};
    struct pair *e = vec_push(&p);
    assert_non_null(e);
    *e = (struct pair){.key = 5, .name = "five"};
    assert_true(vec_append(&p, ((struct pair){.key = 6, .name = "six"})));
    assert_int_equal(p.n, 2);
    assert_int_equal(p.v[0].key, 5);
    assert_string_equal(p.v[1].name, "six");
    vec_free(&p);
}

static void test_reserve(void **state)
{
    (void)state;
    VECTOR(char) s = {0};
    assert_true(vec_reserve(&s, 100));
    assert_int_equal(s.n, 0);
    assert_int_equal(s.cap, 128);
    assert_true(vec_reserve(&s, 128)); /* fits: no growth */
    assert_int_equal(s.cap, 128);
    assert_true(vec_reserve(&s, 129));
    assert_int_equal(s.cap, 256);
    vec_free(&s);
}

/* Sizes whose bytes do not fit in size_t fail without touching the array. */
static void test_overflow(void **state)
{
    (void)state;
    VECTOR(uint64_t) a = {0};
    assert_true(vec_append(&a, 1));
    uint64_t *before = a.v;
    assert_false(vec_reserve(&a, SIZE_MAX));
    assert_false(vec_reserve(&a, SIZE_MAX / 8));
    assert_false(vec_reserve(&a, SIZE_MAX / 2 + 1));
    assert_ptr_equal(a.v, before);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.cap, VEC_MIN_CAP);
    assert_int_equal(a.v[0], 1);
    size_t cap = 4;
    assert_null(hv_vec_grow(NULL, &cap, SIZE_MAX / 2 + 2, 1));
    assert_int_equal(cap, 4);
    vec_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_grow),
        cmocka_unit_test(test_push_struct),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
