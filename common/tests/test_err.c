/* common/err.h: each way of filling an error sets its kind, a prefix keeps it, and the names
 * are the ones the docs use. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"

static void test_kinds(void **state)
{
    (void)state;
    struct hv_err e = {0};
    assert_int_equal(hv_errf(&e, "plain %d", 1), -1);
    assert_string_equal(e.msg, "plain 1");
    assert_int_equal(hv_err_kind(&e), HV_ERR_OTHER);
    assert_int_equal(hv_errk(&e, HV_ERR_CORRUPT, "bad record at %u", 8), -1);
    assert_string_equal(e.msg, "bad record at 8");
    assert_int_equal(hv_err_kind(&e), HV_ERR_CORRUPT);
    assert_int_equal(e.code, 0);
    /* A prefix adds context and keeps the kind. */
    hv_err_prefix(&e, "trace.fxt");
    assert_string_equal(e.msg, "trace.fxt: bad record at 8");
    assert_int_equal(hv_err_kind(&e), HV_ERR_CORRUPT);
    /* hv_errf after hv_errk: the kind is the new error's. */
    hv_errf(&e, "again");
    assert_int_equal(hv_err_kind(&e), HV_ERR_OTHER);
}

static void test_errno(void **state)
{
    (void)state;
    struct hv_err e = {0};
    errno = ENOENT;
    assert_int_equal(hv_errf_errno(&e, "open %s", "x"), -1);
    assert_string_equal(e.msg, "open x: No such file or directory");
    assert_int_equal(hv_err_kind(&e), HV_ERR_OS);
    assert_int_equal(e.code, ENOENT);
    assert_int_equal(errno, ENOENT);
    errno = ENOMEM;
    hv_errf_errno(&e, "mmap");
    assert_int_equal(hv_err_kind(&e), HV_ERR_NO_MEMORY);
    assert_int_equal(e.code, ENOMEM);
    /* Re-kinded: an errno error that is the platform's. */
    assert_int_equal(hv_err_as(&e, HV_ERR_PLATFORM), -1);
    assert_int_equal(hv_err_kind(&e), HV_ERR_PLATFORM);
    assert_int_equal(e.code, ENOMEM);
    hv_err_clear(&e);
    assert_int_equal(hv_err_kind(&e), HV_ERR_OTHER);
    assert_string_equal(e.msg, "");
}

static void test_null_and_names(void **state)
{
    (void)state;
    assert_int_equal(hv_errk(NULL, HV_ERR_LIMIT, "ignored"), -1);
    assert_int_equal(hv_err_as(NULL, HV_ERR_GUEST), -1);
    assert_int_equal(hv_err_kind(NULL), HV_ERR_OTHER);
    const char *names[HV_ERR_KINDS] = {"other",       "no-memory", "os",    "usage",   "corrupt",
                                       "unsupported", "limit",     "guest", "platform"};
    for (int k = 0; k < HV_ERR_KINDS; k++)
        assert_string_equal(hv_err_kind_name((enum hv_err_kind)k), names[k]);
    assert_string_equal(hv_err_kind_name((enum hv_err_kind)99), "other");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_errno),
        cmocka_unit_test(test_null_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
