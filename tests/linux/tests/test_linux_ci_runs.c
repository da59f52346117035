/* CI's matrix (docs/linux.md, "CI's matrix and the full one"): the scenarios of the groups that
 * share L1's default settings (boot, modes, disk, disk-root) run together, in one sequence of L1
 * boots with one warm-up, instead of one per test; each test then checks its own scenarios'
 * results. A fixture: it fails only if the test bed cannot run at all. In the full matrix it does
 * nothing and each test runs its own groups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

static void test_ci_shared_runs(void **state)
{
    (void)state;
    tb_run_ci_shared();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ci_shared_runs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
