/* The test guest on one vCPU: every default program (two copies of workload, syscall, threads,
 * recurse, nofp) runs in user mode in its own address space, and the guest exits 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/integration/guest_expect.h"
#include "tests/integration/guest_run.h"
#include "tests/common/need_kvm.h"

static void test_guest_one_vcpu(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct guest_run r;
    assert_int_equal(guest_run(&r, 1, "seconds=1"), 0);
    guest_expect_default_programs(&r, 1, 2);
    guest_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_guest_one_vcpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
