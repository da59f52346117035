/* cli/parse.c: accepted forms, exact values, range and overflow errors with their messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli/parse.h"

static uint64_t size_ok(const char *s)
{
    uint64_t v = 0;
    struct hv_err err = {0};
    if (parse_size(s, "--mem", 0, UINT64_MAX, &v, &err) < 0)
        fail_msg("parse_size(%s): %s", s, err.msg);
    return v;
}

static const char *size_bad(const char *s, uint64_t min, uint64_t max)
{
    static struct hv_err err;
    uint64_t v = 12345;
    assert_int_equal(parse_size(s, "--mem", min, max, &v, &err), -1);
    assert_int_equal(v, 12345); /* untouched on failure */
    return err.msg;
}

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(size_ok("4096"), 4096);
    assert_int_equal(size_ok("64K"), 64 << 10);
    assert_int_equal(size_ok("64k"), 64 << 10);
    assert_int_equal(size_ok("256M"), 256ull << 20);
    assert_int_equal(size_ok("256MiB"), 256ull << 20);
    assert_int_equal(size_ok("256MB"), 256ull << 20);
    assert_int_equal(size_ok("1G"), 1ull << 30);
    assert_int_equal(size_ok("1.5G"), 3ull << 29);
    assert_int_equal(size_ok("2T"), 2ull << 40);
    assert_int_equal(size_ok("0"), 0);
    assert_true(size_ok("16777215T") == 0xffffff0000000000ull); /* largest T that fits */
}

static void test_size_errors(void **state)
{
    (void)state;
    assert_non_null(strstr(size_bad("", 0, UINT64_MAX), "empty"));
    assert_non_null(strstr(size_bad("abc", 0, UINT64_MAX), "'abc' is not a size"));
    assert_non_null(strstr(size_bad("12Q", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad(" 12", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad("12 ", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad("-1", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad("+1", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad("0x10", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad("1.", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad(".5M", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad("1.0000001K", 0, UINT64_MAX), "whole number of bytes"));
    assert_non_null(strstr(size_bad("18446744073709551616", 0, UINT64_MAX), "not a size"));
    assert_non_null(strstr(size_bad("16777216T", 0, UINT64_MAX), "too large")); /* 2^64 */
    assert_string_equal(size_bad("1M", 16 << 20, 1ull << 40), "--mem: 1M is below the minimum 16M");
    assert_string_equal(size_bad("2T", 16 << 20, 1ull << 40), "--mem: 2T is above the maximum 1T");
}

static void test_uint(void **state)
{
    (void)state;
    uint64_t v;
    struct hv_err err = {0};
    assert_int_equal(parse_uint("4", "--vcpus", 1, 40, &v, &err), 0);
    assert_int_equal(v, 4);
    assert_int_equal(parse_uint("18446744073709551615", "n", 0, UINT64_MAX, &v, &err), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(parse_uint("0", "--vcpus", 1, 40, &v, &err), -1);
    assert_string_equal(err.msg, "--vcpus: 0 is out of range (1..40)");
    assert_int_equal(parse_uint("10000", "--vcpus", 1, 40, &v, &err), -1);
    assert_string_equal(err.msg, "--vcpus: 10000 is out of range (1..40)");
    assert_int_equal(parse_uint("4k", "--vcpus", 1, 40, &v, &err), -1);
    assert_int_equal(parse_uint("1.0", "--vcpus", 1, 40, &v, &err), -1);
    assert_int_equal(parse_uint("", "--vcpus", 1, 40, &v, &err), -1);
    assert_int_equal(parse_uint("99999999999999999999", "n", 0, UINT64_MAX, &v, &err), -1);
}

static void test_freq(void **state)
{
    (void)state;
    uint64_t v;
    struct hv_err err = {0};
    const struct {
        const char *s;
        uint64_t hz;
    } ok[] = {{"1000", 1000}, {"4kHz", 4000},   {"4k", 4000},     {"4KHZ", 4000},
              {"100Hz", 100}, {"2.5kHz", 2500}, {"1MHz", 1000000}};
    for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(parse_freq_hz(ok[i].s, "--rate", 1, 100000000, &v, &err), 0);
        assert_int_equal(v, ok[i].hz);
    }
    assert_int_equal(parse_freq_hz("0.5Hz", "--rate", 1, 100000, &v, &err), -1);
    assert_non_null(strstr(err.msg, "whole number of Hz"));
    assert_int_equal(parse_freq_hz("4 kHz", "--rate", 1, 100000, &v, &err), -1);
    assert_int_equal(parse_freq_hz("200kHz", "--rate", 1, 100000, &v, &err), -1);
    assert_string_equal(err.msg, "--rate: 200kHz is above the maximum 100000 Hz");
    assert_int_equal(parse_freq_hz("0", "--rate", 1, 100000, &v, &err), -1);
    assert_string_equal(err.msg, "--rate: 0 is below the minimum 1 Hz");
    assert_int_equal(hv_err_kind(&err), HV_ERR_USAGE);
}

static void test_duration(void **state)
{
    (void)state;
    uint64_t v;
    struct hv_err err = {0};
    const struct {
        const char *s;
        uint64_t ns;
    } ok[] = {{"2", 2000000000ull},     {"1.5s", 1500000000ull},  {"500ms", 500000000ull},
              {"20us", 20000ull},       {"100ns", 100},           {"2m", 120000000000ull},
              {"1min", 60000000000ull}, {"1h", 3600000000000ull}, {"0.000000001", 1}};
    for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(parse_duration_ns(ok[i].s, "--timeout", 0, UINT64_MAX, &v, &err), 0);
        assert_int_equal(v, ok[i].ns);
    }
    assert_int_equal(parse_duration_ns("0.0000000001", "--timeout", 0, UINT64_MAX, &v, &err), -1);
    assert_non_null(strstr(err.msg, "whole number of nanoseconds"));
    assert_int_equal(parse_duration_ns("5parsecs", "--timeout", 0, UINT64_MAX, &v, &err), -1);
    assert_non_null(strstr(err.msg, "not a duration"));
    assert_int_equal(parse_duration_ns("99999999999h", "--timeout", 0, UINT64_MAX, &v, &err), -1);
    assert_non_null(strstr(err.msg, "too large"));
    assert_int_equal(parse_duration_ns("0", "--timeout", 1000000, UINT64_MAX, &v, &err), -1);
    assert_string_equal(err.msg, "--timeout: 0 is below the minimum 1ms");
}

static void test_format_size(void **state)
{
    (void)state;
    char b[32];
    parse_format_size(16 << 20, b, sizeof(b));
    assert_string_equal(b, "16M");
    parse_format_size(1536, b, sizeof(b));
    /* 1536 = 1.5K: not a whole number of K, so printed in bytes */
    assert_string_equal(b, "1536");
    parse_format_size(0, b, sizeof(b));
    assert_string_equal(b, "0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),    cmocka_unit_test(test_size_errors),
        cmocka_unit_test(test_uint),     cmocka_unit_test(test_freq),
        cmocka_unit_test(test_duration), cmocka_unit_test(test_format_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
