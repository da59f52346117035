/* hvprof confined while a guest runs (docs/security.md, "Confinement"), with the real binary:
 * every thread of a recording with a disk and a network card shows Seccomp 2, NoNewPrivs 1 and
 * no capability; a thread that makes a call outside its kind's set (HVPROF_SANDBOX_SELFTEST)
 * stops the recording cleanly, the call and thread named, the file complete; `--user` runs as
 * that user, the recording handed to them; `--no-sandbox` says so and confines nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/need_kvm.h"
#include "tests/integration/test_hostile_util.h"

static char dir[512];

static int sh(const char *script, char **out)
{
    return hv_sh("/bin/bash", dir, script, out);
}

static const char *at(const char *name)
{
    static char p[4][700];
    static unsigned k;
    char *s = p[k++ % 4];
    snprintf(s, 700, "%s/%s", dir, name);
    return s;
}

static int setup(void **state)
{
    (void)state;
    const char *d = hv_tmp_dir("confined");
    if (!d)
        return -1;
    snprintf(dir, sizeof(dir), "%s", d);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    hv_tmp_cleanup();
    return 0;
}

/* While the guest runs: each thread's name and its Seccomp, NoNewPrivs, CapEff. */
static void test_every_thread_confined(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char *out;
    assert_int_equal(
        sh("truncate -s 16M d.img && ($HV record -o t.fxt --guest demo --disk d.img,format=raw "
           "--net user --cmdline 'progs=workload seconds=3' >/dev/null 2>rec.err & p=$!; "
           "sleep 1.5; for t in /proc/$p/task/*; do echo \"$(cat $t/comm) | "
           "$(grep -E '^(Seccomp|NoNewPrivs|CapEff|CapPrm|CapBnd):' $t/status | tr -s '\\t ' "
           "' ' | tr '\\n' ' ')\"; done >threads.txt; wait $p)",
           NULL),
        0);
    out = hv_read_file(at("threads.txt"), NULL);
    assert_non_null(out);
    fprintf(stderr, "%s", out);
    /* The command's, the vCPU's, the drain's, the disk's and the network's threads. */
    static const char *const names[] = {"hvprof |", "vcpu0 |", "hvprof-drain |", "disk |",
                                        "net |"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strstr(out, names[i]))
            fail_msg("no thread %s while the guest ran", names[i]);
    unsigned lines = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        lines++;
        if (!strstr(l, "Seccomp: 2") || !strstr(l, "NoNewPrivs: 1") ||
            !strstr(l, "CapEff: 0000000000000000") || !strstr(l, "CapPrm: 0000000000000000") ||
            !strstr(l, "CapBnd: 0000000000000000"))
            fail_msg("a thread not confined: %s", l);
    }
    assert_true(lines >= 5);
    free(out);
    char *err = hv_read_file(at("rec.err"), NULL);
    assert_non_null(strstr(err, "  sandbox: on: seccomp per thread, no capabilities"));
    free(err);
}

/* A call outside a thread kind's set: the run stops at once, cleanly, the call and the thread
 * named; the recording is complete (its session_stop marker there). */
static void test_forbidden_call_stops_cleanly(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    static const char *const kinds[] = {"drain", "vCPU", "disk I/O", "network"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        char cmd[1024], *out;
        snprintf(cmd, sizeof(cmd),
                 "rm -f f.fxt; truncate -s 16M d.img; HVPROF_SANDBOX_SELFTEST='%s' $HV record -o "
                 "f.fxt --guest demo --disk d.img,format=raw --net user --cmdline "
                 "'progs=workload seconds=20' --timeout 60",
                 kinds[i]);
        int t0 = (int)time(NULL);
        assert_int_equal(sh(cmd, &out), 1);
        assert_true(time(NULL) - t0 < 20); /* stopped, not timed out */
        char want[256];
        snprintf(want, sizeof(want),
                 "hvprof record: the sandbox refused system call getpgid (121) on the %s thread: "
                 "the run stopped there",
                 kinds[i]);
        if (!strstr(out, want))
            fail_msg("no message naming the call on the %s thread", kinds[i]);
        assert_non_null(strstr(out, "guest stopped (error): the sandbox refused a system call"));
        free(out);
        struct hv_fxt_check c;
        assert_int_equal(hv_fxt_check(at("f.fxt"), &c), 0);
        assert_int_equal(c.stats_status, 0);
        assert_true(c.session_start && c.session_stop);
    }
}

/* --user: the run goes on as that user (its threads' uid), the recording is theirs; the
 * disk image (root's, 0600) was opened before, so it still serves. */
static void test_user(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    if (geteuid() != 0)
        skip();
    char *out;
    assert_int_equal(
        sh("truncate -s 16M d.img && chmod 0600 d.img && ($HV record --user nobody -o u.fxt "
           "--guest demo --disk d.img,format=raw --cmdline 'progs=workload seconds=2' "
           ">/dev/null 2>u.err & p=$!; sleep 1; grep -h '^Uid:' /proc/$p/task/*/status "
           ">uids.txt; wait $p) && $HV dump --stats u.fxt >/dev/null",
           &out),
        0);
    free(out);
    struct stat st;
    assert_int_equal(stat(at("u.fxt"), &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *uids = hv_read_file(at("uids.txt"), NULL);
    for (char *l = strtok(uids, "\n"); l; l = strtok(NULL, "\n"))
        if (strncmp(l, "Uid:\t65534\t65534\t65534\t65534", 29))
            fail_msg("a thread not running as nobody: %s", l);
    free(uids);
    char *err = hv_read_file(at("u.err"), NULL);
    assert_non_null(strstr(err, "  sandbox: on: seccomp per thread, no capabilities, "
                                "no_new_privs, as nobody"));
    free(err);
    assert_int_equal(sh("$HV record --user no-such-user-x -o n.fxt --guest demo", &out), 1);
    assert_non_null(strstr(out, "--user no-such-user-x: no such user"));
    free(out);
}

/* --no-sandbox: loudly unconfined. */
static void test_no_sandbox(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char *out;
    assert_int_equal(sh("$HV run --no-sandbox --guest demo --cmdline 'progs=workload seconds=0.2' "
                        ">/dev/null",
                        &out),
                     0);
    assert_non_null(strstr(out, "hvprof run: --no-sandbox: NOT CONFINED."));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_thread_confined),
        cmocka_unit_test(test_forbidden_call_stops_cleanly),
        cmocka_unit_test(test_user),
        cmocka_unit_test(test_no_sandbox),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
