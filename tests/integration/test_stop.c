/* Stopping and failing cleanly (docs/reliability.md): SIGINT, SIGTERM and SIGHUP during
 * `hvprof record` leave a complete file; a second SIGINT exits at once and leaves a readable
 * prefix; RLIMIT_FSIZE (a full disk) gives a clear error, stops the guest and leaves a readable
 * prefix; an output path that cannot be written is reported before the guest boots. The guest is
 * the test guest's `workload` + `syscall` (user and kernel samples, open continuations). */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/integration/guest_run.h"
#include "tests/integration/test_hostile_util.h"
#include "tests/common/need_kvm.h"

#define USER_MODE_LINE "hvprof-guest: entering user mode"

struct rec_run {
    char out[512], con[512], err[512];
    struct hv_cmd_result r;
    char *errtext, *console;
};

/* hvprof record of a 30 s guest (ended by the signals or the limit long before), 2 vCPUs. */
static void record(struct rec_run *rr, const char *tag, const int *sigs, unsigned nsigs,
                   unsigned delay_ms, unsigned gap_ms, uint64_t fsize_limit)
{
    memset(rr, 0, sizeof(*rr));
    assert_non_null(hv_tmp_dir(tag));
    hv_tmp_path(rr->out, sizeof(rr->out), "rec.fxt");
    hv_tmp_path(rr->con, sizeof(rr->con), "console.txt");
    hv_tmp_path(rr->err, sizeof(rr->err), "stderr.txt");
    const char *argv[] = {hv_exe(),    "record",    "-o",
                          rr->out,     "--guest",   "demo",
                          "--vcpus",   "2",         "--console",
                          rr->con,     "--cmdline", "progs=workload,syscall procs=1 seconds=30",
                          "--timeout", "100s",      NULL};
    struct hv_cmd cmd = {.argv = argv,
                         .stderr_path = rr->err,
                         .fsize_limit = fsize_limit,
                         .wait_file = rr->con,
                         .wait_text = USER_MODE_LINE,
                         .delay_ms = delay_ms,
                         .gap_ms = gap_ms,
                         .nsigs = nsigs,
                         .timeout_s = 120};
    for (unsigned i = 0; i < nsigs; i++)
        cmd.sigs[i] = sigs[i];
    assert_int_equal(hv_cmd_run(&cmd, &rr->r), 0);
    rr->errtext = hv_read_file(rr->err, NULL);
    rr->console = hv_read_file(rr->con, NULL);
    fprintf(stderr, "== %s: status %d after %.2f s\n%s", tag, rr->r.status, rr->r.elapsed_s,
            rr->errtext ? rr->errtext : "(no stderr)\n");
    assert_true(rr->r.signals_sent);
}

static void rec_free(struct rec_run *rr)
{
    free(rr->errtext);
    free(rr->console);
    hv_tmp_cleanup();
}

/* A complete recording: strict reader happy, both session markers, every continuation closed. */
static void expect_complete(const char *path)
{
    struct hv_fxt_check fc;
    assert_int_equal(hv_fxt_check(path, &fc), 0);
    fprintf(stderr, "recording: %lu samples, %lu completions, open %lu; dump --stats %d %s\n",
            (unsigned long)fc.samples, (unsigned long)fc.completions, (unsigned long)fc.open_ids,
            fc.stats_status, fc.stats_err);
    assert_int_equal(fc.stats_status, 0);
    assert_int_equal(fc.dump_status, 0);
    assert_int_equal(fc.bad_walk_words, 0);
    assert_true(fc.session_start);
    assert_true(fc.session_stop);
    assert_true(fc.continuations_ok);
    assert_true(fc.samples > 0);
}

/* A readable prefix (docs/reliability.md): the file starts with the FXT magic record and every
 * record in it passes the strict reader, except that the last one may be cut short: then
 * `hvprof dump --stats` counts every whole record and its only complaint is about the end. */
static void expect_readable_prefix(const char *path, uint64_t min_samples)
{
    struct hv_fxt_check fc;
    assert_int_equal(hv_fxt_check(path, &fc), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    fprintf(stderr, "prefix: %lld bytes, %lu samples; dump --stats %d %s\n", (long long)st.st_size,
            (unsigned long)fc.samples, fc.stats_status, fc.stats_err);
    assert_true(st.st_size >= 8);
    /* A prefix reads whole up to its cut; dump says the cut, if any, and exits 0. */
    assert_int_equal(fc.stats_status, 0);
    if (fc.stats_err[0])
        assert_non_null(strstr(fc.stats_err, "was cut at byte"));
    assert_true(fc.session_start);
    assert_true(fc.samples >= min_samples);
    /* Nothing announced twice, and no completion without its announcement. */
    assert_int_equal(fc.double_completions, 0);
    assert_int_equal(fc.orphan_completions, 0);
}

static void one_signal(int sig, const char *tag)
{
    hv_need_kvm(__func__);
    struct rec_run rr;
    record(&rr, tag, &sig, 1, 1500, 0, 0);
    assert_int_equal(rr.r.status, sig == SIGINT ? 0 : 128 + sig); /* Ctrl-C: a success */
    assert_false(rr.r.signalled);
    char want[64];
    snprintf(want, sizeof(want), "stopped by signal %d", sig);
    assert_non_null(strstr(rr.errtext, want));
    assert_non_null(strstr(rr.errtext, "us/sample")); /* the summary was printed */
    expect_complete(rr.out);
    rec_free(&rr);
}

static void test_sigint(void **state)
{
    (void)state;
    one_signal(SIGINT, "stop-int");
}

static void test_sigterm(void **state)
{
    (void)state;
    one_signal(SIGTERM, "stop-term");
}

static void test_sighup(void **state)
{
    (void)state;
    one_signal(SIGHUP, "stop-hup");
}

/* Two SIGINTs 1 ms apart, 2 s into the guest: if the second comes while the VM is still
 * stopping, hvprof leaves at once (128 + 2) and what is on disk is a readable prefix holding the
 * samples written before; if the VM had already stopped, the second is ignored and the file is
 * complete, with the summary printed (docs/reliability.md, "Signals"). Never SIGINT's default
 * action. */
static void test_second_sigint(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct rec_run rr;
    int sigs[2] = {SIGINT, SIGINT};
    record(&rr, "stop-int2", sigs, 2, 2000, 1, 0);
    assert_false(rr.r.signalled); /* hvprof's own exit, not SIGINT's default action */
    if (strstr(rr.errtext, "second signal, exiting now")) {
        assert_int_equal(rr.r.status, 130); /* the file is cut short: not a success */
        expect_readable_prefix(rr.out, 1);
    } else {
        assert_int_equal(rr.r.status, 0);
        assert_non_null(strstr(rr.errtext, "us/sample")); /* the summary was printed */
        expect_complete(rr.out);
    }
    rec_free(&rr);
}

/* A signal in the middle of start-up (8 ms after the start: options, the output file, the
 * guest's image): the guest is stopped as soon as it exists, the recording is complete (no
 * samples, both session markers), and the command says why it stopped. */
static void test_signal_at_startup(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    for (unsigned delay = 8; delay <= 24; delay += 8) {
        struct rec_run rr;
        memset(&rr, 0, sizeof(rr));
        assert_non_null(hv_tmp_dir("stop-startup"));
        hv_tmp_path(rr.out, sizeof(rr.out), "rec.fxt");
        hv_tmp_path(rr.err, sizeof(rr.err), "stderr.txt");
        const char *argv[] = {hv_exe(),    "record", "-o",        rr.out,
                              "--guest",   "demo",   "--cmdline", "progs=workload seconds=30",
                              "--timeout", "100s",   NULL};
        struct hv_cmd cmd = {.argv = argv,
                             .stderr_path = rr.err,
                             .delay_ms = delay,
                             .nsigs = 1,
                             .sigs = {SIGTERM},
                             .timeout_s = 120};
        assert_int_equal(hv_cmd_run(&cmd, &rr.r), 0);
        rr.errtext = hv_read_file(rr.err, NULL);
        fprintf(stderr, "== SIGTERM %u ms after start: status %d after %.2f s\n%s", delay,
                rr.r.status, rr.r.elapsed_s, rr.errtext ? rr.errtext : "");
        if (rr.r.signalled) {
            /* Before main() (a slow start under a sanitizer runtime): the default action, and
             * nothing may have been created yet. */
            fprintf(stderr, "NOTE: the signal came before hvprof's first instruction\n");
            assert_int_not_equal(access(rr.out, F_OK), 0);
            rec_free(&rr);
            continue;
        }
        assert_int_equal(rr.r.status, 128 + SIGTERM);
        assert_non_null(strstr(rr.errtext, "stopped by signal 15"));
        assert_true(rr.r.elapsed_s < 20);
        struct hv_fxt_check fc;
        assert_int_equal(hv_fxt_check(rr.out, &fc), 0);
        assert_int_equal(fc.stats_status, 0);
        assert_true(fc.session_start && fc.session_stop);
        rec_free(&rr);
    }
}

/* SIGKILL (as a crash or the OOM killer) at several moments of a recording: the file is a
 * readable prefix, and the samples it lacks are at most the last LOSS_BOUND_MS before the kill
 * (docs/reliability.md, "What a kill loses": the drain thread writes every 10 ms; the bound
 * leaves room for a loaded test host). Before, records reached the file only in 256 KiB
 * batches: a kill 2.8 s into a 100 Hz recording left no sample at all. */
#define LOSS_BOUND_MS 500.0
static void test_sigkill_loss(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    static const unsigned delays_ms[] = {300, 1100, 2300};
    for (unsigned i = 0; i < sizeof(delays_ms) / sizeof(delays_ms[0]); i++) {
        struct rec_run rr;
        int sig = SIGKILL;
        record(&rr, "stop-kill", &sig, 1, delays_ms[i], 0, 0);
        assert_true(rr.r.signalled);
        assert_int_equal(rr.r.status, 128 + SIGKILL);
        struct hv_fxt_check fc;
        assert_int_equal(hv_fxt_check(rr.out, &fc), 0);
        double lost_ms = rr.r.sig_at[0] * 1e3 - (double)fc.last_sample_ts / 1e6;
        fprintf(stderr,
                "SIGKILL %u ms into user mode: %lu samples on disk, the last %.1f ms "
                "before the kill\n",
                delays_ms[i], (unsigned long)fc.samples, lost_ms);
        expect_readable_prefix(rr.out, 1);
        assert_true(fc.last_sample_ts > 0);
        assert_true(lost_ms <= LOSS_BOUND_MS);
        rec_free(&rr);
    }
}

/* RLIMIT_FSIZE of 96 KiB (a full disk): a clear error, the guest stopped long before its 30 s,
 * exit status 1, the file a readable prefix no larger than the limit. */
static void test_fsize_limit(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct rec_run rr;
    const uint64_t limit = 96 << 10;
    record(&rr, "stop-fsize", NULL, 0, 0, 0, limit);
    assert_int_equal(rr.r.status, 1);
    assert_true(rr.r.elapsed_s < 25);
    assert_non_null(strstr(rr.errtext, "the file holds everything written before the failure"));
    assert_non_null(strstr(rr.errtext, "File too large"));
    struct stat st;
    assert_int_equal(stat(rr.out, &st), 0);
    assert_true((uint64_t)st.st_size <= limit);
    expect_readable_prefix(rr.out, 1);
    /* "The drop counted": records the vCPUs produced but the file could not take are loss, and
     * the summary's dropped column must say how many (docs/reliability.md). */
    struct hv_summary sum;
    int parsed = hv_parse_summary(rr.errtext, &sum);
    rec_free(&rr); /* before the assertions, which fail until sampler/ counts this loss */
    assert_int_equal(parsed, 0);
    assert_true(sum.dropped > 0);
}

/* A full disk for real: a 128 KiB tmpfs in a private mount namespace (unshare -m; skipped where
 * mounting is not permitted). ENOSPC must behave like RLIMIT_FSIZE: exit 1, a clear error, the
 * guest stopped, a readable prefix. The script copies the file out before the namespace ends. */
static void test_tmpfs_full(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    assert_non_null(hv_tmp_dir("stop-tmpfs"));
    char mnt[512], out[512], con[512], err[512], script[4096];
    hv_tmp_path(mnt, sizeof(mnt), "mnt");
    hv_tmp_path(out, sizeof(out), "rec.fxt");
    hv_tmp_path(con, sizeof(con), "console.txt");
    hv_tmp_path(err, sizeof(err), "stderr.txt");
    assert_int_equal(mkdir(mnt, 0755), 0);
    snprintf(script, sizeof(script),
             "mount -t tmpfs -o size=128k hvprof-full '%s' || exit 77; "
             "'%s' record -o '%s/rec.fxt' --guest demo --vcpus 2 --console '%s' "
             "--cmdline 'progs=workload,syscall procs=1 seconds=30' --timeout 100s; rc=$?; "
             "cp '%s/rec.fxt' '%s'; exit $rc",
             mnt, hv_exe(), mnt, con, mnt, out);
    const char *argv[] = {
        "/usr/bin/unshare", geteuid() == 0 ? "-m" : "-rm", "/bin/sh", "-c", script, NULL};
    if (access(argv[0], X_OK) != 0)
        hv_skip_binary(__func__, "no /usr/bin/unshare to mount a small tmpfs");
    struct hv_cmd cmd = {.argv = argv, .stderr_path = err, .timeout_s = 120};
    struct hv_cmd_result r;
    assert_int_equal(hv_cmd_run(&cmd, &r), 0);
    char *e = hv_read_file(err, NULL);
    fprintf(stderr, "status %d after %.2f s:\n%s", r.status, r.elapsed_s, e ? e : "");
    if (r.status == 77 || (e && strstr(e, "unshare:"))) {
        free(e);
        hv_tmp_cleanup();
        /* The last test of this binary: exiting reports it skipped after the others ran. */
        hv_skip_binary(__func__, "no permission to mount a tmpfs here");
    }
    assert_int_equal(r.status, 1);
    assert_true(r.elapsed_s < 25);
    assert_non_null(strstr(e, "No space left on device"));
    assert_non_null(strstr(e, "the file holds everything written before the failure"));
    expect_readable_prefix(out, 1);
    free(e);
    hv_tmp_cleanup();
}

/* An output path that cannot be written: reported before the guest boots (no console output,
 * exit status 1, at once). */
static void test_unwritable_output(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    assert_non_null(hv_tmp_dir("stop-unwritable"));
    char out[512], con[512], err[512];
    hv_tmp_path(out, sizeof(out), "no-such-dir/rec.fxt");
    hv_tmp_path(con, sizeof(con), "console.txt");
    hv_tmp_path(err, sizeof(err), "stderr.txt");
    const char *argv[] = {hv_exe(), "record", "-o", out, "--guest", "demo", "--console", con, NULL};
    struct hv_cmd cmd = {.argv = argv, .stderr_path = err};
    struct hv_cmd_result r;
    assert_int_equal(hv_cmd_run(&cmd, &r), 0);
    char *e = hv_read_file(err, NULL);
    fprintf(stderr, "status %d: %s", r.status, e ? e : "");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(e, "No such file or directory"));
    assert_non_null(strstr(e, "no-such-dir/rec.fxt"));
    assert_false(hv_file_contains(con, "hvprof-guest: boot")); /* the guest never started */
    free(e);
    hv_tmp_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unwritable_output), cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_sigterm),           cmocka_unit_test(test_sighup),
        cmocka_unit_test(test_second_sigint),     cmocka_unit_test(test_signal_at_startup),
        cmocka_unit_test(test_sigkill_loss),      cmocka_unit_test(test_fsize_limit),
        cmocka_unit_test(test_tmpfs_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
