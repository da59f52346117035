/* Loss is never silent: with a deliberately tiny --buffer and deep stacks at a high rate, the
 * rings overflow; the dropped records are counted in the trace (records_dropped events) and in
 * the summary, with the same total, and the file still reads cleanly. With the default buffer
 * at 4 kHz nothing is dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "tests/common/need_kvm.h"

/* The "total" row of the summary: user kernel idle missed complete abandon dropped us. */
static unsigned long long summary_dropped(const char *summary)
{
    const char *p = strstr(summary, "  total ");
    assert_non_null(p);
    unsigned long long v[7];
    assert_int_equal(sscanf(p, " total %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                            &v[3], &v[4], &v[5], &v[6]),
                     7);
    return v[6];
}

static void test_tiny_buffer_drops_counted(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    assert_int_equal(record_run(&r, 0, 0, 0, "--vcpus", "1", "--hz", "10000", "--buffer", "32K",
                                "--max-depth", "1000", "--cmdline",
                                "progs=recurse depth=900 seconds=2", NULL),
                     0);
    assert_int_equal(r.status, 0);
    unsigned long long dropped = summary_dropped(r.summary);
    struct rm_trace t;
    rm_load(&t, r.out_path); /* asserts the file decodes to its end */
    print_message("dropped: summary %llu, trace %llu in %llu loss records; %zu samples kept\n",
                  dropped, (unsigned long long)t.dropped, (unsigned long long)t.loss_records, t.n);
    assert_true(dropped > 0);
    assert_true(t.loss_records > 0);
    assert_int_equal(t.dropped, dropped);
    assert_non_null(strstr(r.summary, "records were dropped"));
    rm_free(&t);
    record_result_free(&r);
}

static void test_default_buffer_4khz_no_drops(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    assert_int_equal(record_run(&r, 0, 0, 0, "--vcpus", "2", "--hz", "4000", "--cmdline",
                                "progs=recurse,workload procs=1 seconds=2", NULL),
                     0);
    assert_int_equal(r.status, 0);
    assert_int_equal(summary_dropped(r.summary), 0);
    struct rm_trace t;
    rm_load(&t, r.out_path);
    assert_int_equal(t.loss_records, 0);
    assert_true(t.n > 1000);
    rm_free(&t);
    record_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_buffer_drops_counted),
        cmocka_unit_test(test_default_buffer_4khz_no_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
