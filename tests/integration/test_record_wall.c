/* --mode wall samples every tick: per vCPU, the samples in the trace plus the ticks the summary
 * counts as missed (the vCPU thread ran too late to take them: a busy host) are within 10 % of
 * rate x duration, where the duration is the vCPU's own span in the trace (first to last
 * sample), so boot and tear-down do not count. In --mode cpu the halted vCPU's ticks are idle.
 * The application processor's ticks before the guest starts it are at the reset vector, and
 * the report names them (docs/report.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "tests/common/need_kvm.h"

/* The summary's "missed" column for vCPU v ("  vcpuV  user kernel idle missed ..."). */
static unsigned long long missed_ticks(const char *summary, unsigned v)
{
    char key[16];
    snprintf(key, sizeof(key), "  vcpu%u ", v);
    const char *l = summary ? strstr(summary, key) : NULL;
    unsigned long long user, kernel, idle, missed;
    if (!l || sscanf(l + strlen(key), "%llu %llu %llu %llu", &user, &kernel, &idle, &missed) != 4)
        fail_msg("no vcpu%u line in the summary:\n%s", v, summary ? summary : "");
    return missed;
}

static void test_wall_rate(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    /* One workload process on 2 vCPUs: one vCPU busy in user mode, the other mostly idle (HLT),
     * and wall mode must sample both at the full rate. */
    assert_int_equal(record_run(&r, 0, 0, 0, "--vcpus", "2", "--hz", "1000", "--mode", "wall",
                                "--duration", "3", "--cmdline", "progs=workload procs=1 seconds=60",
                                NULL),
                     0);
    assert_int_equal(r.status, 0); /* --duration ends the recording successfully */
    struct rm_trace t;
    rm_load(&t, r.out_path);
    for (unsigned v = 0; v < 2; v++) {
        uint64_t first = UINT64_MAX, last = 0, n = 0;
        for (size_t i = 0; i < t.n; i++) {
            const struct rm_sample *s = &t.s[i];
            if (s->vcpu != v)
                continue;
            n++;
            first = s->ts < first ? s->ts : first;
            last = s->ts > last ? s->ts : last;
        }
        assert_true(n > 100);
        double expect = (double)(last - first) / 1e9 * 1000.0 + 1;
        unsigned long long missed = missed_ticks(r.summary, v);
        print_message("vcpu%u: %llu samples and %llu missed ticks over %.3f s, expected %.0f "
                      "(%.1f%%)\n",
                      v, (unsigned long long)n, missed, (double)(last - first) / 1e9, expect,
                      100.0 * (double)(n + missed) / expect);
        assert_true((double)(n + missed) >= 0.9 * expect && (double)(n + missed) <= 1.1 * expect);
    }
    /* Under PVM the guest's kernel code is emulated: its boot processor takes milliseconds
     * before it starts vCPU 1, which waits at 0xfff0 (SDM Vol. 3A 9.1.4) meanwhile. */
    size_t at_reset = 0;
    for (size_t i = 0; i < t.n; i++)
        at_reset += t.s[i].vcpu == 1 && t.s[i].cpl == 0 && t.s[i].pc == 0xfff0;
    print_message("vcpu1: %zu samples at the reset vector\n", at_reset);
    assert_true(at_reset > 0);
    char cmd[2048], top[600];
    snprintf(top, sizeof(top), "%s.top", r.out_path);
    snprintf(cmd, sizeof(cmd), "'%s' report -q --vcpu 1 --limit 1000 '%s' > '%s'",
             guest_build_path("cli/hvprof"), r.out_path, top);
    assert_int_equal(system(cmd), 0);
    char *text = guest_read_file(top, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "[k] vcpu_not_started"));
    assert_non_null(strstr(text, "[reset vector]"));
    assert_null(strstr(text, "0xfff0"));
    free(text);
    rm_free(&t);
    record_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wall_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
