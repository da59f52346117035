/* Guest identities recognised from CPU state alone: the two threads of one process (distinct FS
 * bases) get distinct thread ids and one process id; two processes get distinct process ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "tests/common/need_kvm.h"

static void test_threads_and_processes(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    assert_int_equal(record_run(&r, 0, 0, 0, "--vcpus", "2", "--hz", "1000", "--cmdline",
                                "progs=threads,workload procs=2 seconds=1", NULL),
                     0);
    assert_int_equal(r.status, 0);
    struct rm_trace t;
    rm_load(&t, r.out_path);

    uint64_t a_tid = 0, b_tid = 0, a_pid = 0, b_pid = 0, work_pid[2] = {0, 0};
    size_t a_n = 0, b_n = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct rm_sample *s = &t.s[i];
        if (s->cpl != 3)
            continue;
        if (rm_user_chain_starts(s, "thread_start;thread_a")) {
            if (a_tid)
                assert_true(s->tid == a_tid && s->pid == a_pid);
            a_tid = s->tid, a_pid = s->pid, a_n++;
        } else if (rm_user_chain_starts(s, "thread_start;thread_b")) {
            if (b_tid)
                assert_true(s->tid == b_tid && s->pid == b_pid);
            b_tid = s->tid, b_pid = s->pid, b_n++;
        } else if (!strcmp(s->prog, "workload")) {
            if (!work_pid[0] || work_pid[0] == s->pid)
                work_pid[0] = s->pid;
            else if (!work_pid[1] || work_pid[1] == s->pid)
                work_pid[1] = s->pid;
            else
                fail_msg("a third workload address space 0x%llx", (unsigned long long)s->pid);
        }
    }
    print_message("thread A: %zu samples tid 0x%llx; thread B: %zu samples tid 0x%llx; pid "
                  "0x%llx / 0x%llx; workload pids 0x%llx 0x%llx\n",
                  a_n, (unsigned long long)a_tid, b_n, (unsigned long long)b_tid,
                  (unsigned long long)a_pid, (unsigned long long)b_pid,
                  (unsigned long long)work_pid[0], (unsigned long long)work_pid[1]);
    assert_true(a_n > 20 && b_n > 20);
    assert_true(a_tid != b_tid);
    assert_true(a_pid == b_pid);
    assert_true(work_pid[0] && work_pid[1] && work_pid[0] != work_pid[1]);
    assert_true(work_pid[0] != a_pid && work_pid[1] != a_pid);
    rm_free(&t);
    record_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_and_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
