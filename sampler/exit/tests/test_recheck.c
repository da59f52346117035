/* The re-check spacing (sampler/exit/recheck.h): the first re-check at the base gap after a
 * tick, the gap doubling while the thread stays in the kernel up to the sampling period, the
 * floor of twice an exit's whole cost (its handling and how late it reached hvprof), and no
 * re-check armed where the next tick comes first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sampler/exit/recheck.h"

#define US 1000ull
#define MS 1000000ull

static void test_gap_doubles_to_the_period(void **state)
{
    (void)state;
    struct exit_recheck r = {0};
    uint64_t now = 10 * MS, period = 10 * MS, next_due = now + period;
    exit_recheck_on_tick(&r, 200 * US, 0);
    assert_int_equal(exit_recheck_after(&r, now, 5 * US, next_due), 200 * US);
    uint64_t want[] = {400 * US, 800 * US, 1600 * US, 3200 * US};
    for (unsigned i = 0; i < 4; i++) {
        now = r.due_ns; /* each re-check on time, the thread still in the kernel */
        exit_recheck_on_recheck(&r, now, period);
        assert_int_equal(r.late_ns, 0);
        assert_int_equal(exit_recheck_after(&r, now, 5 * US, next_due), want[i]);
    }
    /* 6.4 ms in: the next gap (6.4 ms) would pass the tick at 20 ms: none armed. */
    now = r.due_ns;
    exit_recheck_on_recheck(&r, now, period);
    assert_int_equal(exit_recheck_after(&r, now, 5 * US, next_due), 0);
    assert_int_equal(r.due_ns, 0);
    /* The gap never passes the period, however long the stay. */
    for (unsigned i = 0; i < 64; i++)
        exit_recheck_on_recheck(&r, now, period);
    assert_int_equal(r.gap_ns, period);
    /* The next tick starts again at the base. */
    exit_recheck_on_tick(&r, 200 * US, 0);
    assert_int_equal(exit_recheck_after(&r, next_due, 5 * US, next_due + period), 200 * US);
}

static void test_floor_counts_the_whole_exit(void **state)
{
    (void)state;
    struct exit_recheck r = {0};
    uint64_t period = 1 * MS, now = 100 * MS;
    /* An exit that cost hvprof 150 us: the guest gets at least 300 us. */
    exit_recheck_on_tick(&r, 200 * US, 0);
    assert_int_equal(exit_recheck_after(&r, now, 150 * US, now + period), 300 * US);
    /* The re-check reached hvprof 120 us after its expiry (the world switch) and cost 30 us:
     * the floor, 2 * (30 + 120) = 300 us, is under the doubled gap, 400 us. */
    uint64_t t0 = r.due_ns + 120 * US;
    exit_recheck_on_recheck(&r, t0, 10 * period);
    assert_int_equal(r.late_ns, 120 * US);
    assert_int_equal(exit_recheck_after(&r, t0, 30 * US, t0 + 10 * period), 400 * US);
    /* The next one 350 us late and costing 100 us: the floor, 2 * (100 + 350) = 900 us, wins
     * over the doubled gap, 800 us. */
    t0 = r.due_ns + 350 * US;
    exit_recheck_on_recheck(&r, t0, 10 * period);
    assert_int_equal(exit_recheck_after(&r, t0, 100 * US, t0 + 10 * period), 900 * US);
    /* A late tick (250 us after its expiry): the first re-check waits 2 * (250 + 10) us. */
    exit_recheck_on_tick(&r, 200 * US, 250 * US);
    assert_int_equal(exit_recheck_after(&r, t0, 10 * US, t0 + 10 * period), 520 * US);
}

static void test_tick_first_means_none(void **state)
{
    (void)state;
    struct exit_recheck r = {0};
    /* 100 us to the next tick, a base of 200 us: the tick does the re-check's work. */
    exit_recheck_on_tick(&r, 200 * US, 0);
    assert_int_equal(exit_recheck_after(&r, 5 * MS, 5 * US, 5 * MS + 100 * US), 0);
    assert_int_equal(r.due_ns, 0);
    /* A re-check whose timer was disarmed is not late. */
    exit_recheck_on_recheck(&r, 6 * MS, 1 * MS);
    assert_int_equal(r.late_ns, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gap_doubles_to_the_period),
        cmocka_unit_test(test_floor_counts_the_whole_exit),
        cmocka_unit_test(test_tick_first_means_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
