/* thread_sched.c: the schedstat text as Linux prints it (fs/proc/base.c proc_pid_schedstat:
 * "%llu %llu %lu\n"), pinned values, what is not that, and this thread's own file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "sampler/parts/thread_sched.h"

static int parse(const char *s, struct thread_sched *t)
{
    return thread_sched_parse(s, strlen(s), t);
}

static void test_parse(void **state)
{
    (void)state;
    struct thread_sched t;
    assert_int_equal(parse("1234567 89012 34\n", &t), 0);
    assert_int_equal(t.run_ns, 1234567);
    assert_int_equal(t.wait_ns, 89012);
    assert_int_equal(parse("18446744073709551615 0 0\n", &t), 0);
    assert_true(t.run_ns == UINT64_MAX);
    assert_int_equal(t.wait_ns, 0);
    assert_int_equal(parse("0 0 0", &t), 0); /* no newline */
}

static void test_refused(void **state)
{
    (void)state;
    struct thread_sched t = {7, 7};
    const char *bad[] = {
        "",         "\n",      "1 2\n",    "1 2 3 4\n", "1 -2 3\n",
        "1 2x 3\n", "a b c\n", " 1 2 3\n", "1 2 3\nX",  "18446744073709551616 0 0\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(parse(bad[i], &t), -1);
    assert_int_equal(t.run_ns, 7); /* untouched */
}

static void test_self(void **state)
{
    (void)state;
    struct thread_sched a, b;
    assert_int_equal(thread_sched_self(&a), 0);
    /* 50 ms of this thread's CPU time: its run time grows by about that (Linux brings it up to
     * date at scheduler ticks, 4-10 ms apart), never shrinks. */
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000ll + (t.tv_nsec - t0.tv_nsec) < 50000000);
    assert_int_equal(thread_sched_self(&b), 0);
    assert_true(b.run_ns >= a.run_ns + 25000000);
    assert_true(b.wait_ns >= a.wait_ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
