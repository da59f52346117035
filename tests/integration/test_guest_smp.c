/* The test guest on two vCPUs (the AP started by INIT-SIPI-SIPI), three copies of workload and
 * user stacks on 2 MiB pages: every program exits 0 and so does the guest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/integration/guest_expect.h"
#include "tests/integration/guest_run.h"
#include "tests/common/need_kvm.h"

static void test_guest_two_vcpus_hugepages(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct guest_run r;
    assert_int_equal(guest_run(&r, 2, "seconds=1 hugepages=1 procs=3"), 0);
    guest_expect_default_programs(&r, 2, 3);
    char line[512];
    assert_non_null(guest_line(&r, "hvprof-guest: boot ", line, sizeof(line)));
    assert_int_equal(guest_field(line, "hugepages"), 1);
    guest_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_guest_two_vcpus_hugepages)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
