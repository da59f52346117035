/* A user-mode page fault ends only the faulting process (status 128 + 14) and makes the guest's
 * final status 1, while another program on the other vCPU still completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/guest_run.h"
#include "tests/common/need_kvm.h"

static void test_guest_user_fault(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct guest_run r;
    char line[512];
    assert_int_equal(guest_run(&r, 2, "progs=segv,workload procs=1 seconds=1"), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(guest_line(&r, "hvprof-guest: pid=1 prog=segv", line, sizeof(line)));
    assert_non_null(strstr(line, "killed by #PF"));
    assert_non_null(strstr(line, "cr2=0x10"));
    assert_non_null(guest_line(&r, "hvprof-guest: exit pid=1 prog=segv", line, sizeof(line)));
    assert_int_equal(guest_field(line, "status"), 142);
    assert_non_null(guest_line(&r, "hvprof-guest: exit pid=2 prog=workload", line, sizeof(line)));
    assert_int_equal(guest_field(line, "status"), 0);
    assert_int_equal(guest_count_lines(&r, "segv: still alive"), 0);
    assert_non_null(guest_line(&r, "hvprof-guest: summary ", line, sizeof(line)));
    assert_int_equal(guest_field(line, "failed"), 1);
    assert_int_equal(guest_field(line, "ok"), 1);
    assert_non_null(guest_line(&r, "hvprof-guest: status 1", line, sizeof(line)));
    guest_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_guest_user_fault)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
