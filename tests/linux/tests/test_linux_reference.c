/* The reference boots (docs/linux.md "Test bed"): QEMU with KVM, inside the same outer VM, boots
 * each Debian kernel at 1, 2 and 4 vCPUs (CI's matrix: the kernels and vCPU counts its hvprof
 * scenarios use, generic at 1 and 2, cloud at 1: tb_select). Their consoles are what hvprof's boots
 * of the same kernels are compared with (tb_check_console_clean): a warning that QEMU's boot prints
 * too comes from the emulated CPU (QEMU's TCG), not from hvprof. Fixture for the other Linux tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

static void test_reference_boots(void **state)
{
    (void)state;
    char out[4096];
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("reference", 1, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_keep_reference(out, sel[i].name, &sel[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_reference_boots)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
