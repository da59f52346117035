/* End to end on the real test guest: `hvprof record` boots it under sampling, `hvprof report`
 * symbolizes from the file plus symbol directories only (modules are discovered in guest
 * memory; the recording names them by build-id, never by a path the test hands over). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/fxt_load.h"
#include "report/profile.h"
#include "report/report.h"
#include "symbolize/symbol_path.h"
#include "testutil.h"

struct e2e {
    char *dir;
    char hvprof[4096], progs[4096], kernel[4096], rec[4200], syms[12400];
    unsigned long long samples;
};

static int setup(void **state)
{
    const char *bin = getenv("HVPROF_BINARY_DIR");
    if (!bin)
        return -1;
    struct e2e *e = calloc(1, sizeof(*e));
    e->dir = make_temp_dir();
    snprintf(e->hvprof, sizeof(e->hvprof), "%s/cli/hvprof", bin);
    snprintf(e->progs, sizeof(e->progs), "%s/tests/guest/progs", bin);
    snprintf(e->kernel, sizeof(e->kernel), "%s/tests/guest/hvprof-guest.elf", bin);
    snprintf(e->rec, sizeof(e->rec), "%s/rec.fxt", e->dir);
    snprintf(e->syms, sizeof(e->syms), "--symbols '%s' --vmlinux '%s'", e->progs, e->kernel);
    int st;
    char *out = run_capturef(&st, "'%s' record -o '%s' --guest demo --duration 3 --quiet 2>&1",
                             e->hvprof, e->rec);
    if (st != 0) {
        fprintf(stderr, "record failed: %s\n", out ? out : "");
        free(out);
        return -1;
    }
    free(out);
    out = run_capturef(&st, "'%s' report '%s' %s -q", e->hvprof, e->rec, e->syms);
    if (st != 0 || !out || sscanf(out, "# hvprof report: %llu samples", &e->samples) != 1)
        return -1;
    free(out);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct e2e *e = *state;
    remove_temp_dir(e->dir);
    free(e);
    return 0;
}

static void test_top_and_folded(void **state)
{
    struct e2e *e = *state;
    assert_true(e->samples > 100);
    int st;
    char *top = run_capturef(&st, "'%s' report '%s' %s -q --limit 200", e->hvprof, e->rec, e->syms);
    assert_int_equal(st, 0);
    /* The workloads' functions by name, from modules discovered in guest memory. */
    assert_non_null(strstr(top, "workload.elf             [.] hot_leaf"));
    assert_non_null(strstr(top, "[k] kbusy_spin"));
    assert_non_null(strstr(top, "workload.elf\n")); /* a process named from its main module */
    free(top);
    char *sum =
        run_capturef(&st, "'%s' report '%s' %s -q --format folded | awk '{s += $NF} END {print s}'",
                     e->hvprof, e->rec, e->syms);
    assert_int_equal(st, 0);
    assert_int_equal(strtoull(sum, NULL, 10), e->samples);
    free(sum);
}

static void test_pprof(void **state)
{
    struct e2e *e = *state;
    int st;
    char *out = run_capturef(&st,
                             "'%s' report '%s' %s -q --format pprof -o '%s/p.pb.gz' && "
                             "/usr/bin/python3 '%s' '%s/p.pb.gz' '%s' '%s'",
                             e->hvprof, e->rec, e->syms, e->dir, CHECK_PPROF, e->dir,
                             PROFILE_PROTO_DIR, e->dir);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "\"hot_leaf\""));
    assert_non_null(strstr(out, "\"kbusy_spin\""));
    char path[4200], hex[130], want[300];
    snprintf(path, sizeof(path), "%s/workload.elf", e->progs);
    assert_int_equal(readelf_build_id(path, hex, sizeof(hex)), 40);
    snprintf(want, sizeof(want), "[\"workload.elf\", \"%s\"]", hex);
    assert_non_null(strstr(out, want));
    free(out);
}

/* The recording loaded as every sample and as one entry per distinct stack (profile.aggregate,
 * docs/report.md "Memory"), symbolized alike. */
static char *write_loaded(const struct e2e *e, bool aggregate, enum report_format f, size_t *len,
                          size_t *entries)
{
    struct profile p;
    profile_init(&p);
    p.aggregate = aggregate;
    p.want_lines = f == REPORT_PPROF;
    struct symbol_path sp;
    symbol_path_init(&sp);
    struct hv_err err = {0};
    char kdir[4096];
    snprintf(kdir, sizeof(kdir), "%.4000s/..", e->progs);
    if (fxt_load_profile_file(e->rec, &p, NULL, NULL, NULL, &err) < 0 ||
        symbol_path_add_dir(&sp, e->progs, &err) < 0 || symbol_path_add_dir(&sp, kdir, &err) < 0 ||
        profile_load_symbols(&p, &sp, NULL, &err) < 0 ||
        profile_symbolize(&p, NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    char *buf = NULL;
    FILE *out = open_memstream(&buf, len);
    assert_non_null(out);
    struct report_opts o = {0};
    assert_int_equal(report_write(f, &p, &o, out, &err), 0);
    fclose(out);
    *entries = p.samples.n;
    symbol_path_free(&sp);
    profile_free(&p);
    return buf;
}

/* Every format that needs no sample's own time writes the same bytes from either. */
static void test_aggregated_outputs_identical(void **state)
{
    struct e2e *e = *state;
    static const enum report_format fs[] = {REPORT_TOP,  REPORT_FOLDED, REPORT_PPROF,
                                            REPORT_TREE, REPORT_SVG,    REPORT_JSON};
    for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
        size_t la, lb, na, nb;
        char *a = write_loaded(e, false, fs[i], &la, &na);
        char *b = write_loaded(e, true, fs[i], &lb, &nb);
        print_message("%s: %zu bytes; %zu samples kept as %zu entries\n", report_format_name(fs[i]),
                      la, na, nb);
        assert_true(nb < na);
        assert_true(la > 0 && la == lb && !memcmp(a, b, la));
        free(a);
        free(b);
    }
}

static void test_svg_perf_script_timeline(void **state)
{
    struct e2e *e = *state;
    int st;
    char *out = run_capturef(
        &st,
        "'%s' report '%s' %s -q --format svg -o '%s/f.svg' && xmllint --noout '%s/f.svg' "
        "&& grep -c 'data-n=\"hot_leaf\"' '%s/f.svg'",
        e->hvprof, e->rec, e->syms, e->dir, e->dir, e->dir);
    assert_int_equal(st, 0);
    assert_true(atoi(out) >= 1);
    free(out);
    /* perf script: one header line (no leading tab) per sample, blocks separated by blank lines. */
    out = run_capturef(&st, "'%s' report '%s' %s -q --format perf-script | grep -c 'cpu-clock: $'",
                       e->hvprof, e->rec, e->syms);
    assert_int_equal(strtoull(out, NULL, 10), e->samples);
    free(out);
    out = run_capturef(&st, "'%s' report '%s' %s -q --format perf-script | grep -c '^$'", e->hvprof,
                       e->rec, e->syms);
    assert_int_equal(strtoull(out, NULL, 10), e->samples);
    free(out);
    out =
        run_capturef(&st,
                     "'%s' report '%s' %s -q --format timeline -o '%s/t.fxt' && '%s' dump --stats "
                     "'%s/t.fxt'",
                     e->hvprof, e->rec, e->syms, e->dir, e->hvprof, e->dir);
    assert_int_equal(st, 0);
    free(out);
}

/* A recording whose stacks were cut at --max-depth says so in the report's header: with
 * --max-depth 2 nearly every walk of the test guest's programs is cut. */
static void test_cut_stacks_are_reported(void **state)
{
    struct e2e *e = *state;
    int st;
    char *out = run_capturef(
        &st,
        "'%s' record -o '%s/d2.fxt' --guest demo --duration 1 --max-depth 2 --quiet >/dev/null "
        "2>&1 && '%s' report '%s/d2.fxt' -q | sed -n 2p",
        e->hvprof, e->dir, e->hvprof, e->dir);
    assert_int_equal(st, 0);
    unsigned long long cut = 0;
    if (!out || sscanf(out, "# %llu stack walks were cut at --max-depth", &cut) != 1)
        fail_msg("no cut-stack line: %s", out ? out : "(none)");
    assert_true(cut > 0);
    free(out);
    out = run_capturef(&st, "'%s' dump --stats '%s/d2.fxt' | awk '/^samples/ {print $2}'",
                       e->hvprof, e->dir);
    unsigned long long samples = out ? strtoull(out, NULL, 10) : 0;
    assert_true(cut * 2 > samples); /* most of them */
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_and_folded),
        cmocka_unit_test(test_pprof),
        cmocka_unit_test(test_aggregated_outputs_identical),
        cmocka_unit_test(test_svg_perf_script_timeline),
        cmocka_unit_test(test_cut_stacks_are_reported),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
