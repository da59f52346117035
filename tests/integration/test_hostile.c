/* `hvprof record` under each hostile test-guest program (docs/test-guest.md "Hostile programs",
 * docs/reliability.md): the recording is complete (dump --stats exits 0, session markers at both
 * ends), every continuation is completed or abandoned exactly once, nothing is dropped, bad
 * stacks are truncated with the expected stop reasons, and the guest's own result is what the
 * program promises. Prints the summary's per-sample figures (the bound is in
 * docs/reliability.md; timing is never asserted here). HVPROF_HOSTILE_SECONDS overrides the
 * per-program run time (default 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/guest_run.h"
#include "tests/integration/test_hostile_util.h"
#include "tests/common/need_kvm.h"

#define STOP(r) (1u << (r)) /* HVFXT_STOP_* (fxt/hvprof_format.h) */
enum {
    S_END = 1,
    S_UNMAPPED = 3,
    S_BAD_FP = 4,
    S_NOT_UPWARD = 5,
    S_DEFERRED = 6,
    S_AB_TIMEOUT = 9,
    S_AB_END = 10
};

struct hostile_case {
    const char *prog;
    const char *extra; /* more guest command line */
    unsigned vcpus;
    int status;              /* hvprof record's exit status (= the guest's) */
    const char *console;     /* a console line that must appear */
    uint32_t ustops, kstops; /* stop reasons that must appear */
    const char *stderr_has;
};

static const struct hostile_case cases[] = {
    {"hostile_fp", "", 1, 0, "hostile_fp: pid=1 kinds=11",
     STOP(S_UNMAPPED) | STOP(S_BAD_FP) | STOP(S_NOT_UPWARD), 0, NULL},
    {"hostile_kfp", "", 1, 0, "hostile_kfp: pid=1 kinds=8", STOP(S_DEFERRED),
     STOP(S_BAD_FP) | STOP(S_NOT_UPWARD), NULL},
    {"hostile_pt", "", 1, 0, "hostile_pt: pid=1", STOP(S_UNMAPPED) | STOP(S_BAD_FP), 0, NULL},
    {"hostile_hugestack", "", 1, 0, "hostile_hugestack: pid=1 map=0", STOP(S_BAD_FP), 0, NULL},
    {"hostile_hugestack", " hugepages=1", 2, 0, "hostile_hugestack: pid=1 map=0", STOP(S_BAD_FP), 0,
     NULL},
    {"hostile_fsbase", "", 2, 0, "hostile_fsbase: pid=1", STOP(S_END), 0, NULL},
    {"hostile_cpl0", " cpl0_us=1000000", 1, 0, "hostile_cpl0: pid=1",
     STOP(S_DEFERRED) | STOP(S_AB_TIMEOUT), STOP(S_END), NULL},
    {"hostile_pio", "", 1, 0, "hostile_pio: pid=1", 0, 0, NULL},
    {"hostile_triple", "", 2, 1, "hostile_triple: pid=1", STOP(S_END), 0,
     "guest stopped (triple-fault)"},
};

static void check_case(const struct hostile_case *hc)
{
    hv_need_kvm(__func__);
    const char *secs = getenv("HVPROF_HOSTILE_SECONDS");
    char cmdline[256], out[512], con[512], err[512], vcpus[8], label[64];
    snprintf(label, sizeof(label), "hostile-%s", hc->prog);
    assert_non_null(hv_tmp_dir(label));
    hv_tmp_path(out, sizeof(out), "rec.fxt");
    hv_tmp_path(con, sizeof(con), "console.txt");
    hv_tmp_path(err, sizeof(err), "stderr.txt");
    snprintf(cmdline, sizeof(cmdline), "progs=%s seconds=%s%s", hc->prog, secs ? secs : "2",
             hc->extra);
    snprintf(vcpus, sizeof(vcpus), "%u", hc->vcpus);
    const char *argv[] = {hv_exe(),    "record",  "-o",        out,         "--guest",
                          "demo",      "--vcpus", vcpus,       "--console", con,
                          "--cmdline", cmdline,   "--timeout", "120s",      NULL};
    struct hv_cmd cmd = {.argv = argv, .stderr_path = err};
    struct hv_cmd_result r;
    fprintf(stderr, "== %s, %s vCPUs, \"%s\"\n", hc->prog, vcpus, cmdline);
    assert_int_equal(hv_cmd_run(&cmd, &r), 0);
    char *errtext = hv_read_file(err, NULL);
    char *context = hv_read_file(con, NULL);
    fprintf(stderr, "%s---- console ----\n%s----\n", errtext ? errtext : "",
            context ? context : "");
    assert_int_equal(r.status, hc->status);
    assert_non_null(context);
    assert_non_null(strstr(context, hc->console));
    if (hc->status == 0)
        assert_non_null(strstr(context, "hvprof-guest: status 0"));
    if (hc->stderr_has)
        assert_non_null(strstr(errtext, hc->stderr_has));

    struct hv_summary sum;
    assert_int_equal(hv_parse_summary(errtext, &sum), 0);
    fprintf(stderr,
            "per-sample: %s mean %.2f us, max %.2f us (-1: not printed); user %lu kernel "
            "%lu idle %lu missed %lu\n",
            hc->prog, sum.mean_us, sum.max_us, (unsigned long)sum.user, (unsigned long)sum.kernel,
            (unsigned long)sum.idle, (unsigned long)sum.missed);
    assert_true(sum.user + sum.kernel > 0);
    assert_int_equal(sum.dropped, 0);

    struct hv_fxt_check fc;
    assert_int_equal(hv_fxt_check(out, &fc), 0);
    fprintf(stderr,
            "recording: %lu samples, %lu partial, %lu completions (%lu abandoned), open "
            "%lu, double %lu, orphan %lu, ustops %#x, kstops %#x, frames u%lu k%lu\n",
            (unsigned long)fc.samples, (unsigned long)fc.partials, (unsigned long)fc.completions,
            (unsigned long)fc.abandoned, (unsigned long)fc.open_ids,
            (unsigned long)fc.double_completions, (unsigned long)fc.orphan_completions, fc.ustops,
            fc.kstops, (unsigned long)fc.max_user_frames, (unsigned long)fc.max_kernel_frames);
    assert_int_equal(fc.stats_status, 0);
    assert_int_equal(fc.dump_status, 0);
    assert_int_equal(fc.bad_walk_words, 0);
    assert_true(fc.session_start);
    assert_true(fc.session_stop);
    assert_true(fc.continuations_ok);
    assert_int_equal(fc.dropped_events, 0);
    assert_int_equal(fc.completions, sum.completed + sum.abandoned);
    assert_int_equal(fc.abandoned, sum.abandoned);
    assert_int_equal(fc.ustops & hc->ustops, hc->ustops);
    assert_int_equal(fc.kstops & hc->kstops, hc->kstops);
    free(errtext);
    free(context);
    hv_tmp_cleanup();
}

#define CASE(i)                                                                                    \
    static void test_##i(void **state)                                                             \
    {                                                                                              \
        (void)state;                                                                               \
        check_case(&cases[i]);                                                                     \
    }
CASE(0)
CASE(1)
CASE(2)
CASE(3)
CASE(4)
CASE(5)
CASE(6)
CASE(7)
CASE(8)

int main(void)
{
    _Static_assert(sizeof(cases) / sizeof(cases[0]) == 9, "one test per case");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_0), cmocka_unit_test(test_1), cmocka_unit_test(test_2),
        cmocka_unit_test(test_3), cmocka_unit_test(test_4), cmocka_unit_test(test_5),
        cmocka_unit_test(test_6), cmocka_unit_test(test_7), cmocka_unit_test(test_8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
