/* Golden words for every generic record kind the encoders produce, computed by hand from the bit
 * layouts of the FXT specification ("Record types"). hvprof's own records: schema/tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/encode.h"

static uint64_t str_word(const char *s)
{
    uint64_t w = 0;
    memcpy(&w, s, strlen(s));
    return w;
}

static void test_metadata_and_init(void **state)
{
    uint64_t b[8];
    assert_int_equal(fxt_enc_magic(b, 8), 1);
    assert_true(b[0] == 0x0016547846040010ull);
    assert_int_equal(fxt_enc_init(b, 8, 1000000000), 2);
    assert_true(b[0] == 0x21 && b[1] == 1000000000);
    assert_int_equal(fxt_enc_init(b, 8, 0), 0); /* the Fuchsia reader rejects a zero rate */
    assert_int_equal(fxt_enc_provider_info(b, 8, 1, "guest", 5), 2);
    assert_true(b[0] == 0x0050000000110020ull);
    assert_true(b[1] == str_word("guest"));
    assert_int_equal(fxt_enc_provider_section(b, 8, 1), 1);
    assert_true(b[0] == 0x0000000000120010ull);
    assert_int_equal(fxt_enc_provider_event(b, 8, 1, 0), 1);
    assert_true(b[0] == 0x0000000000130010ull);
    char longname[300];
    memset(longname, 'x', sizeof(longname));
    assert_int_equal(fxt_enc_provider_info(b, 8, 1, longname, 256), 0); /* 8-bit length */
}

static void test_string_and_thread(void **state)
{
    uint64_t b[8];
    assert_int_equal(fxt_enc_string(b, 8, 1, "abcdefgh", 8), 2);
    assert_true(b[0] == 0x0000000800010022ull && b[1] == str_word("abcdefgh"));
    assert_int_equal(fxt_enc_string(b, 8, 0, "a", 1), 0);      /* index 0 is never registered */
    assert_int_equal(fxt_enc_string(b, 8, 0x8000, "a", 1), 0); /* 15-bit index */
    assert_int_equal(fxt_enc_string(b, 8, 0x7fff, "abc", 3), 2);
    assert_true(b[0] == 0x000000037fff0022ull);
    assert_int_equal(fxt_enc_thread(b, 8, 1, 0x11, 0x22), 3);
    assert_true(b[0] == 0x0000000000010033ull && b[1] == 0x11 && b[2] == 0x22);
    assert_int_equal(fxt_enc_thread(b, 8, 0, 1, 2), 0);
}

static void test_kernel_objects(void **state)
{
    uint64_t b[8];
    assert_int_equal(fxt_enc_kobj_process(b, 8, 0x1234, "guest"), 3);
    assert_true(b[0] == 0x0000008005010037ull && b[1] == 0x1234 && b[2] == str_word("guest"));
    assert_int_equal(fxt_enc_kobj_thread(b, 8, 0x99, "main", 0x1234), 6);
    assert_true(b[0] == 0x0000018004020067ull);
    assert_true(b[1] == 0x99 && b[2] == str_word("main"));
    assert_true(b[3] == 0x0000000080070038ull); /* koid argument, 3 words, name "process" */
    assert_true(b[4] == str_word("process") && b[5] == 0x1234);
}

static void test_events_and_args(void **state)
{
    uint64_t b[32];
    struct fxt_event ev = {.type = FXT_EV_COMPLETE,
                           .ts = 10,
                           .thread = {.index = 1},
                           .category = fxt_str_index(1),
                           .name = fxt_str_index(2),
                           .extra = 20};
    assert_int_equal(fxt_enc_event(b, 32, &ev), 3);
    assert_true(b[0] == 0x0002000101040034ull && b[1] == 10 && b[2] == 20);

    struct fxt_arg args[] = {
        {.type = FXT_ARG_I32, .name = fxt_str_index(3), .v.i32 = -1},
        {.type = FXT_ARG_BOOL, .name = fxt_str_index(4), .v.b = true},
        {.type = FXT_ARG_DOUBLE, .name = fxt_str_index(5), .v.f64 = 1.5},
        {.type = FXT_ARG_STRING, .name = fxt_str_index(6), .v.str = fxt_str_index(7)},
        {.type = FXT_ARG_KOID, .name = fxt_str_index(8), .v.u64 = 0x1234},
        {.type = FXT_ARG_NULL, .name = fxt_str_index(10)},
        {.type = FXT_ARG_STRING, .name = fxt_str_inline("s"), .v.str = fxt_str_inline("hi")},
    };
    struct fxt_event in = {.type = FXT_EV_INSTANT,
                           .ts = 100,
                           .thread = {.index = 1},
                           .category = fxt_str_index(1),
                           .name = fxt_str_index(2),
                           .args = args,
                           .nargs = 7};
    assert_int_equal(fxt_enc_event(b, 32, &in), 13);
    const uint64_t want[13] = {
        0x00020001017000d4ull,
        100,
        0xffffffff00030011ull,
        0x0000000100040019ull,
        0x0000000000050025ull,
        0x3ff8000000000000ull,
        0x0000000700060016ull,
        0x0000000000080028ull,
        0x1234,
        0x00000000000a0010ull,
        0x0000800280010036ull,
        str_word("s"),
        str_word("hi"),
    };
    assert_memory_equal(b, want, sizeof(want));

    struct fxt_arg ints[] = {
        {.type = FXT_ARG_U32, .name = fxt_str_index(9), .v.u32 = 7},
        {.type = FXT_ARG_I64, .name = fxt_str_index(9), .v.i64 = -2},
        {.type = FXT_ARG_U64, .name = fxt_str_index(9), .v.u64 = 3},
        {.type = FXT_ARG_POINTER, .name = fxt_str_index(9), .v.u64 = 0xfeed},
    };
    struct fxt_event ctr = {.type = FXT_EV_COUNTER,
                            .ts = 5,
                            .thread = {.pid = 1, .tid = 2},
                            .name = fxt_str_index(2),
                            .args = ints,
                            .nargs = 4,
                            .extra = 42};
    assert_int_equal(fxt_enc_event(b, 32, &ctr), 1 + 3 + 7 + 1);
    assert_true(b[0] == (0x0002000000000004ull | (12ull << 4) | (1ull << 16) | (4ull << 20)));
    assert_true(b[1] == 5 && b[2] == 1 && b[3] == 2);
    assert_true(b[4] == 0x0000000700090012ull);
    assert_true(b[5] == 0x0000000000090023ull && b[6] == (uint64_t)-2);
    assert_true(b[7] == 0x0000000000090024ull && b[8] == 3);
    assert_true(b[9] == 0x0000000000090027ull && b[10] == 0xfeed);
    assert_true(b[11] == 42);

    assert_int_equal(fxt_enc_event(b, 12, &in), 0); /* too small a buffer */
    in.nargs = 16;
    assert_int_equal(fxt_enc_event(b, 32, &in), 0); /* 4-bit argument count */
}

static void test_blob(void **state)
{
    uint64_t b[8];
    assert_int_equal(fxt_enc_blob(b, 8, fxt_str_inline("b"), 1, "xyz", 3), 3);
    assert_true(b[0] == 0x0001000380010035ull && b[1] == str_word("b") && b[2] == str_word("xyz"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_and_init),
        cmocka_unit_test(test_string_and_thread),
        cmocka_unit_test(test_kernel_objects),
        cmocka_unit_test(test_events_and_args),
        cmocka_unit_test(test_blob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
