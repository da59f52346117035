/* Debian's generic and cloud kernels under `hvprof record` on the test bed, at 1, 2 and 4 vCPUs
 * with KASLR on (the kernels' default), each boot twice so that a flaky boot shows up (the full
 * matrix; CI's runs generic at 1 and 2 vCPUs and cloud at 1, once: tb_select): user
 * space reached with every vCPU up, the workloads run and the guest reboots cleanly, the console
 * prints no warning that QEMU/KVM's boot of the same kernel does not, and the recording holds
 * user and kernel samples, kernel samples with user stacks and one process per workload process,
 * kernel symbols read from the guest's memory that match its /proc/kallsyms and name >= 95% of
 * the kernel samples, exact user chains (cloud's runs with no files at all: the workloads'
 * names and unwind tables from the guest's page cache), hv_syscalls' kernel stacks unwound with
 * the guest kernel's ORC tables from the sampled PC to the system-call entry (docs/orc.md), and
 * Google's pprof finding the samples of a static executable, a PIE and a shared object in their
 * files (-disasm). */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

static void test_boot_matrix(void **state)
{
    (void)state;
    char out[4096];
    struct tb_boot_totals t = {.pprof = true};
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("boot", 2, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, tb_check_boot_run, &t);
    /* Exact chains judged on enough samples over the matrix (a run may be starved). */
    printf("user samples in the workloads' known functions judged: %" PRIu64
           "; hv_syscalls' kernel samples judged: %" PRIu64 "\n",
           t.judged, t.syscall);
    /* A run judges 70-280 user samples and 580-1360 of hv_syscalls' at 1.5 s, 310-500 user samples
     * at one vCPU and 4 s (CI's matrix, 2 runs): 1000 and 1000 in the full matrix, 300 and 500 in
     * CI's (one of its two runs may be lost to the platform). */
    assert_true(t.judged >= (tb_full() ? 1000u : 300u));
    assert_true(t.syscall >= (tb_full() ? 1000u : 500u));
    /* pprof -disasm found the samples of a static executable's, a PIE's and a shared object's
     * function in their binaries. */
    printf("pprof -disasm verified for %u of %d image kinds\n", __builtin_popcount(t.pprof_kinds),
           TB_PPROF_FNS);
    assert_int_equal(t.pprof_kinds, (1u << TB_PPROF_FNS) - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_boot_matrix)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
