/* Steal time (docs/sampling.md, "Steal time"): with two busy vCPUs and, beside them, as many
 * host processes spinning as the host has CPUs, the vCPU threads wait for a host CPU a good
 * part of the time, and the summary says how much: per vCPU, a share of the wall time that
 * adds up to the total line, and at least a fifth of it (the scheduler shares the CPUs among
 * the spinners and the vCPU threads: about half). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "tests/common/need_kvm.h"

static void test_steal_under_load(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1 || ncpu > 64)
        ncpu = 2;
    pid_t hogs[64];
    for (long i = 0; i < ncpu; i++) {
        hogs[i] = fork();
        assert_true(hogs[i] >= 0);
        if (hogs[i] == 0) {
            alarm(120); /* never outlive the test */
            for (volatile unsigned long x = 0;; x++)
                ;
        }
    }
    struct record_result r;
    int rc = record_run(&r, 0, 0, 0, "--vcpus", "2", "--hz", "250", "--duration", "3", "--cmdline",
                        "progs=workload procs=2 seconds=60", NULL);
    for (long i = 0; i < ncpu; i++) {
        kill(hogs[i], SIGKILL);
        waitpid(hogs[i], NULL, 0);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(r.status, 0);
    const char *l = strstr(r.summary, "  steal: the vCPU threads waited for a host CPU ");
    if (!l)
        fail_msg("no steal line in the summary:\n%s", r.summary);
    double steal, wall, pct;
    assert_int_equal(sscanf(l,
                            "  steal: the vCPU threads waited for a host CPU %lf ms of %lf ms "
                            "(%lf%%):",
                            &steal, &wall, &pct),
                     3);
    print_message("steal %.1f ms of %.1f ms (%.1f%%), %ld spinning processes\n", steal, wall, pct,
                  ncpu);
    /* The wall time is both vCPUs' spans: a little over 2 x --duration (the boot before it). */
    assert_true(wall >= 2 * 3000.0 && wall <= 2 * 60000.0);
    assert_true(steal <= wall);
    assert_true(pct >= 20.0);
    double sum = 0;
    const char *p = strchr(l, ':') + 1;
    p = strchr(p, ':');
    assert_non_null(p);
    for (unsigned v = 0; v < 2; v++) {
        char key[16];
        snprintf(key, sizeof(key), "vcpu%u ", v);
        const char *q = strstr(p, key);
        assert_non_null(q);
        double ms, share;
        assert_int_equal(sscanf(q + strlen(key), "%lf ms (%lf%%)", &ms, &share), 2);
        assert_true(share >= 0 && share <= 100);
        sum += ms;
    }
    assert_true(sum >= steal - 0.2 && sum <= steal + 0.2); /* each rounded to 0.1 ms */
    record_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steal_under_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
