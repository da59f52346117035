/* The flight recorder (`record --ring`, docs/sampling.md "A flight recorder") on the real test
 * guest: SIGUSR2 writes snapshots while the guest runs, --ring-keep bounds how many stay, the
 * file at the end holds the newest samples only, every record it let go is counted in the
 * overwrite events, a time window keeps the last seconds only, and a guest's triple fault
 * leaves its snapshot. */
#include <glob.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "schema/decode.h"
#include "tests/common/need_kvm.h"

struct ring_file {
    uint64_t overwritten, overwrite_events, last_overwritten_ts;
    uint64_t samples, min_ts, max_ts;
    char snapshot[32]; /* session_stop's "snapshot" argument */
};

/* The file's overwrite events, its samples' time span and why it was written, read with the
 * strict decoder. */
static void read_ring_file(const char *path, struct ring_file *rf)
{
    memset(rf, 0, sizeof(*rf));
    rf->min_ts = UINT64_MAX;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    rewind(f);
    void *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, len, f), len);
    fclose(f);
    struct hv_err err = {0};
    struct fxtr_reader r;
    fxtr_init(&r, buf, len);
    struct hvfxt_record *x = malloc(sizeof(*x));
    assert_non_null(x);
    int rc;
    while ((rc = hvfxt_next(&r, x, &err)) == 1) {
        if (x->kind == HVFXT_REC_OVERWRITE) {
            rf->overwrite_events++;
            rf->overwritten += x->u.loss.dropped;
            if (x->u.loss.last_ts > rf->last_overwritten_ts)
                rf->last_overwritten_ts = x->u.loss.last_ts;
        } else if (x->kind == HVFXT_REC_SAMPLE && (x->u.sample.fields & HVFXT_SF_BOOT_TS)) {
            rf->samples++;
            if (x->u.sample.ts < rf->min_ts)
                rf->min_ts = x->u.sample.ts;
            if (x->u.sample.ts > rf->max_ts)
                rf->max_ts = x->u.sample.ts;
        } else if (x->fxt.type == FXTR_EVENT &&
                   fxtr_str_is(x->fxt.u.event.name, HVFXT_SESSION_STOP)) {
            for (unsigned i = 0; i < x->fxt.u.event.nargs; i++) {
                const struct fxtr_arg *a = &x->fxt.u.event.args[i];
                if (fxtr_str_is(a->name, HVFXT_ARG_SNAPSHOT) && a->type == FXTR_ARG_STRING)
                    snprintf(rf->snapshot, sizeof(rf->snapshot), "%.*s", (int)a->v.s.len,
                             a->v.s.ptr);
            }
        }
    }
    if (rc < 0)
        fail_msg("%s: %s", path, err.msg);
    fxtr_free(&r);
    free(x);
    free(buf);
}

/* OUT.fxt -> the snapshots next to it, OUT.<UTC time>Z.fxt. */
static size_t snapshots_of(const char *out, glob_t *g)
{
    char pat[512];
    snprintf(pat, sizeof(pat), "%.*s.*Z.fxt", (int)(strlen(out) - 4), out);
    if (glob(pat, 0, NULL, g) != 0)
        return 0;
    return g->gl_pathc;
}

static void test_snapshots_on_sigusr2(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    /* 1 MiB holds ~2,500 of this guest's samples: 6 s at 1 kHz overwrite most of them. Two
     * SIGUSR2 at 2.5 s and 2.7 s, --ring-keep 1: one snapshot stays. */
    assert_int_equal(record_run(&r, 2500, SIGUSR2, SIGUSR2, "--ring", "1M", "--ring-keep", "1",
                                "--duration", "6", "--cmdline", "progs=workload,recurse seconds=30",
                                NULL),
                     0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.summary, "flight recorder: "));
    assert_non_null(strstr(r.summary, "hvprof record: snapshot "));
    glob_t g;
    assert_int_equal(snapshots_of(r.out_path, &g), 1);
    struct ring_file snap, end;
    read_ring_file(g.gl_pathv[0], &snap);
    read_ring_file(r.out_path, &end);
    assert_string_equal(snap.snapshot, "signal");
    assert_string_equal(end.snapshot, "stop");
    /* The file at the end: only the newest, one overwrite event for the one vCPU, every sample
     * newer than the newest overwritten record (one vCPU: its records enter in time order). */
    assert_true(end.samples > 1000);
    assert_int_equal(end.overwrite_events, 1);
    assert_true(end.overwritten > end.samples);
    assert_true(end.min_ts > end.last_overwritten_ts);
    /* The snapshot came ~3.5 s before the end: its newest sample is older than the end's
     * oldest or close, and it counts fewer overwrites. */
    assert_true(snap.samples > 100);
    assert_true(snap.max_ts < end.max_ts - 2000000000ull);
    assert_true(snap.overwritten < end.overwritten);
    /* Both read as recordings: report names the workload's functions. */
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "%s report %s 2>&1 | grep -q hot_leaf",
             guest_build_path("cli/hvprof"), g.gl_pathv[0]);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s report %s 2>&1 | grep -q 'is a flight recording'",
             guest_build_path("cli/hvprof"), r.out_path);
    assert_int_equal(system(cmd), 0);
    unlink(g.gl_pathv[0]);
    globfree(&g);
    record_result_free(&r);
}

static void test_time_window(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    assert_int_equal(record_run(&r, 0, 0, 0, "--ring", "1s,16M", "--duration", "4", "--cmdline",
                                "progs=workload seconds=30", NULL),
                     0);
    assert_int_equal(r.status, 0);
    struct ring_file end;
    read_ring_file(r.out_path, &end);
    /* The last second, to within one drain pass (10 ms) and the samples' spacing; 16 MiB
     * would have held all four. */
    assert_true(end.samples > 300);
    assert_true(end.max_ts - end.min_ts <= 1000000000ull);
    assert_true(end.max_ts - end.min_ts >= 900000000ull);
    assert_int_equal(end.overwrite_events, 1);
    assert_true(end.last_overwritten_ts < end.min_ts);
    assert_true(end.last_overwritten_ts + 1000000000ull >= end.max_ts - 20000000ull);
    record_result_free(&r);
}

/* A guest that ends itself (here a triple fault) is a trigger: a snapshot beside the file, and
 * both say why they were written. */
static void test_triple_fault_snapshot(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    struct record_result r;
    assert_int_equal(record_run(&r, 0, 0, 0, "--ring", "1M", "--cmdline",
                                "progs=hostile_triple,workload seconds=3", NULL),
                     0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.summary, "guest stopped (triple-fault)"));
    assert_non_null(strstr(r.summary, "(triple-fault): "));
    glob_t g;
    assert_int_equal(snapshots_of(r.out_path, &g), 1);
    struct ring_file snap, end;
    read_ring_file(g.gl_pathv[0], &snap);
    read_ring_file(r.out_path, &end);
    assert_string_equal(snap.snapshot, "triple-fault");
    assert_string_equal(end.snapshot, "triple-fault");
    assert_true(end.samples > 1000);
    assert_int_equal(snap.samples, end.samples);
    assert_int_equal(snap.max_ts, end.max_ts);
    unlink(g.gl_pathv[0]);
    globfree(&g);
    record_result_free(&r);
}

static void test_ring_errors(void **state)
{
    (void)state;
    char cmd[1200];
    const char *hv = guest_build_path("cli/hvprof");
    const char *bad[] = {"2", "30", "1s,2s", "1M,2M", "100K", "1s,2M,3M", "fast"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(cmd, sizeof(cmd), "%s record -o /dev/null --guest demo --ring '%s' 2>/dev/null",
                 hv, bad[i]);
        int st = system(cmd);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) != 2)
            fail_msg("--ring %s: exit %d, not 2", bad[i], WEXITSTATUS(st));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_errors),
        cmocka_unit_test(test_snapshots_on_sigusr2),
        cmocka_unit_test(test_time_window),
        cmocka_unit_test(test_triple_fault_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
