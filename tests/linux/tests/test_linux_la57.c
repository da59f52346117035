/* 5-level paging: the outer VM gets LA57 from QEMU's TCG (-cpu ...,+la57), so its KVM offers it
 * to the guest and Debian's kernels (CONFIG_X86_5LEVEL=y) switch to 5-level page tables. hvprof
 * must translate the guest's addresses through five levels: frame-pointer walks of hv_busy
 * reach main, the kernel's symbols and its loaded module's (read through init_top_pgt as a PML5)
 * match the guest's /proc/kallsyms, the workloads' chains are exact by name with no files (from
 * the guest's page cache), and the checks of every boot hold. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    (void)ctx;
    tb_check_boot(r, s);
    if (r->paging_levels != 5)
        fail_msg("%s: the guest runs %u-level paging", r->name, r->paging_levels);
    tb_check_recording(r);
    tb_check_kernel_symbols(r, 0.95);
    /* spin <- leaf_a/hot_b <- hot_a/main <- main <- its caller: frame pointers through 5-level
     * paging, from any of the program's functions through main. */
    uint64_t n, to_main;
    tb_user_stacks(r, "hv_busy", &n, &to_main);
    printf("%s: %.1f s, hv_busy: %" PRIu64 " user samples, %" PRIu64 " walked through main\n",
           r->name, r->seconds, n, to_main);
    assert_true(n > 0);
    if (to_main * 100 < n * 99)
        fail_msg("%s: %" PRIu64 " of %" PRIu64 " hv_busy samples walked through main (99 %% "
                 "wanted)",
                 r->name, to_main, n);
    /* With no files at all (the group records without --symbols): names and unwind tables from
     * the guest's page cache, read through 5-level paging. */
    tb_check_user_stacks(r, 0.95, false);
}

static void test_la57(void **state)
{
    (void)state;
    setenv("HVPROF_TB_CPU", "EPYC,+svm,+la57", 1);
    char out[4096];
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("la57", 2, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_la57)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
