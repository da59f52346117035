/* hvprof record on the workload program, 2 vCPUs at 1 kHz and 4 kHz: user-mode samples resolve
 * (raw addresses + the program's ELF symbols, module found in guest memory) to the exact known
 * call chains, and each known function's share is close to the ground truth
 * (docs/test-guest.md: 60 / 30 / 10 %). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "tests/common/need_kvm.h"

static const char *const chains[] = {
    "_start;main;alpha;hot_leaf",
    "_start;main;beta;warm_leaf",
    "_start;main;gamma",
};
static const double truth[] = {0.60, 0.30, 0.10};

static void check_rate(const char *hz)
{
    hv_need_kvm(__func__);
    struct record_result r;
    assert_int_equal(record_run(&r, 0, 0, 0, "--vcpus", "2", "--hz", hz, "--cmdline",
                                "progs=workload procs=2 seconds=2", NULL),
                     0);
    assert_int_equal(r.status, 0);
    struct rm_trace t;
    rm_load(&t, r.out_path);

    size_t user = 0, exact = 0, per_chain[3] = {0};
    char buf[4096];
    for (size_t i = 0; i < t.n; i++) {
        const struct rm_sample *s = &t.s[i];
        if (s->cpl != 3 || strcmp(s->prog, "workload"))
            continue;
        user++;
        rm_user_chain(s, buf, sizeof(buf));
        for (int c = 0; c < 3; c++) {
            if (!strcmp(buf, chains[c])) {
                exact++;
                per_chain[c]++;
            }
        }
    }
    print_message("%s Hz: %zu workload user samples, %zu (%.1f%%) exact chains; shares "
                  "%.1f / %.1f / %.1f %%\n",
                  hz, user, exact, user ? 100.0 * (double)exact / (double)user : 0,
                  user ? 100.0 * (double)per_chain[0] / (double)user : 0,
                  user ? 100.0 * (double)per_chain[1] / (double)user : 0,
                  user ? 100.0 * (double)per_chain[2] / (double)user : 0);
    assert_true(user >= 200);
    assert_true((double)exact >= 0.95 * (double)user);
    for (int c = 0; c < 3; c++) {
        double share = (double)per_chain[c] / (double)user;
        if (share < truth[c] - 0.05 || share > truth[c] + 0.05)
            fail_msg("%s: share %.3f, ground truth %.2f", chains[c], share, truth[c]);
    }
    rm_free(&t);
    record_result_free(&r);
}

static void test_chains_1khz(void **state)
{
    (void)state;
    check_rate("1000");
}

static void test_chains_4khz(void **state)
{
    (void)state;
    check_rate("4000");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chains_1khz),
        cmocka_unit_test(test_chains_4khz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
