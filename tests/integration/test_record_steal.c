/* Steal time (docs/sampling.md, "Steal time"): with two busy vCPUs and, beside them, as many
 * host processes spinning as the host has CPUs, the vCPU threads wait for a host CPU a good
 * part of the time, and the summary says how much: per vCPU, a share of the wall time that
 * adds up to the total line, and at least a fifth of it (the scheduler shares the CPUs among
 * the spinners and the vCPU threads: about half). Over time, as the timeline draws it: a marker
 * every 0.1 s per vCPU, the last of each equal to the summary's. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "report/fxt_load.h"
#include "report/profile.h"
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
    double sum = 0, per[2];
    const char *p = strchr(l, ':') + 1;
    p = strchr(p, ':');
    assert_non_null(p);
    for (unsigned v = 0; v < 2; v++) {
        char key[16];
        snprintf(key, sizeof(key), "vcpu%u ", v);
        const char *q = strstr(p, key);
        assert_non_null(q);
        double share;
        assert_int_equal(sscanf(q + strlen(key), "%lf ms (%lf%%)", &per[v], &share), 2);
        assert_true(share >= 0 && share <= 100);
        sum += per[v];
    }
    assert_true(sum >= steal - 0.2 && sum <= steal + 0.2); /* each rounded to 0.1 ms */

    /* Over time (the timeline's counters): each vCPU's markers every 0.1 s while it ran, never
     * decreasing, the last one at its stop with the summary's number. */
    struct profile prof;
    struct hv_err err;
    profile_init(&prof);
    if (fxt_load_profile_file(r.out_path, &prof, NULL, NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    for (unsigned v = 0; v < 2; v++) {
        unsigned n = 0;
        uint64_t last = 0, last_ts = 0;
        for (size_t i = 0; i < prof.steal.n; i++) {
            const struct prof_steal *m = &prof.steal.v[i];
            if (m->vcpu != v)
                continue;
            assert_true(m->steal_ns >= last && m->ts >= last_ts);
            last = m->steal_ns;
            last_ts = m->ts;
            n++;
        }
        print_message("vcpu%u: %u steal markers, the last %.1f ms\n", v, n, (double)last / 1e6);
        assert_true(n >= 10); /* 3 s and the boot, every 0.1 s at most (31 in a nested run) */
        assert_true((double)last / 1e6 >= per[v] - 0.1 && (double)last / 1e6 <= per[v] + 0.1);
    }
    profile_free(&prof);
    record_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steal_under_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
