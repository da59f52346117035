/* The guest modes that change what the hypervisor sees: KASLR off (nokaslr) and page-table
 * isolation forced on (pti=on, the default on Intel CPUs; the test bed's CPU is an AMD EPYC,
 * where it is off). With PTI, every process has two top-level page tables (user PGD = kernel
 * PGD + 4 KiB) and CR3 switches between them at every kernel entry and exit: each workload
 * must still be one process, and kernel-mode samples must still be completed with the user
 * stack about as often as without PTI. Kernel symbols from the guest's memory must name its
 * kernel samples in every mode. Each scenario runs twice in the full matrix; CI's runs PTI off,
 * PTI on, and PTI on with KASLR off on the cloud kernel, once each and at one vCPU (tb_select). */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

struct totals {
    uint64_t with_pti, without;
    uint64_t judged;  /* user samples whose chains were judged */
    uint64_t syscall; /* hv_syscalls' kernel samples judged */
};

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    struct totals *t = ctx;
    tb_check_boot(r, s);
    bool want_pti = strstr(s->cmdline, "pti=on") != NULL;
    if (r->pti != want_pti)
        fail_msg("%s: the guest runs with PTI %s", r->name, r->pti ? "on" : "off");
    char *ref = tb_reference(s->kernel, s->vcpus);
    tb_check_console_clean(r, s, ref);
    free(ref);
    uint64_t c = tb_check_recording(r);
    tb_check_kernel_symbols(r, 0.95); /* with or without PTI and KASLR */
    tb_check_tasks(r);
    /* Chains through glibc to clone3 / __libc_start_call_main: a process's first samples may
     * come before its libraries' unwind tables are published (docs/cfi.md): 95 %, the issue's
     * target; the runs measured 97.4-100 %. */
    t->judged += tb_check_user_stacks(r, 0.95, strstr(s->opts, "--symbols") != NULL);
    t->syscall += tb_check_syscall_stacks(r, 0.95); /* ORC with and without PTI and KASLR */
    if (!strcmp(s->name, "generic-pti"))
        t->with_pti += c;
    else if (!strcmp(s->name, "generic-nopti"))
        t->without += c;
    printf("%s: %.1f s, %" PRIu64 " kernel samples with user stacks\n", r->name, r->seconds, c);
}

static void test_pti_and_kaslr(void **state)
{
    (void)state;
    char out[4096];
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t nsel = tb_run_group("modes", 2, sel, &repeat, out, sizeof(out));
    struct totals t = {0, 0, 0, 0};
    unsigned runs_pti = 0, runs_nopti = 0;
    for (size_t i = 0; i < nsel; i++) {
        unsigned n = tb_each_run(out, &sel[i], repeat, check, &t);
        if (!strcmp(sel[i].name, "generic-pti"))
            runs_pti = n;
        else if (!strcmp(sel[i].name, "generic-nopti"))
            runs_nopti = n;
    }
    printf("kernel samples with user stacks per run: %.0f with PTI, %.0f without\n",
           (double)t.with_pti / runs_pti, (double)t.without / runs_nopti);
    /* Comparable (before PTI pairs were recognised, completions were 3 against ~100): per run,
     * PTI's are at least half of those without. */
    assert_true(t.with_pti * runs_nopti * 2 >= t.without * runs_pti);
    printf("user samples in the workloads' known functions judged: %" PRIu64
           "; hv_syscalls' kernel samples judged: %" PRIu64 "\n",
           t.judged, t.syscall);
    /* A run judges 70-280 user samples and 580-1360 of hv_syscalls' at 1.5 s, 310-500 user samples
     * at one vCPU and 4 s (CI's matrix, 3 runs): 1000 and 1000 in the full matrix, 300 and 1000 in
     * CI's. */
    assert_true(t.judged >= (tb_full() ? 1000u : 300u));
    assert_true(t.syscall >= 1000u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pti_and_kaslr)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
