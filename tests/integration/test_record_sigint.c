/* Ctrl-C in the middle of a recording: the guest stops, the buffers drain, and the file is
 * complete: `hvprof dump --stats` accepts it and it ends with the session_stop marker. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "tests/common/need_kvm.h"

static void test_sigint_leaves_complete_file(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    assert_int_equal(record_run(&r, 1500, SIGINT, 0, "--vcpus", "2", "--hz", "1000", "--cmdline",
                                "progs=workload,syscall procs=1 seconds=60", NULL),
                     0);
    assert_int_equal(r.status, 0); /* Ctrl-C ends a recording: a success, the file complete */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s dump --stats %s > /dev/null", guest_build_path("cli/hvprof"),
             r.out_path);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s dump %s | grep -q session_stop", guest_build_path("cli/hvprof"),
             r.out_path);
    assert_int_equal(system(cmd), 0);
    struct rm_trace t;
    rm_load(&t, r.out_path);
    assert_true(t.n > 100);
    for (size_t i = 0; i < t.n; i++) /* no continuation is left open */
        if (t.s[i].continuation)
            assert_true(t.s[i].completed || t.s[i].abandoned);
    rm_free(&t);
    record_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigint_leaves_complete_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
