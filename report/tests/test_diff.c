/* hvprof diff's model and writers on the synthetic profile (synth.c: 60 samples in fixture_leaf
 * under fixture_middle, 25 in fixture_middle, 5 + 4 unresolved, 6 in the kernel; 100 in all)
 * against itself and against a copy whose 60 hot samples weigh 3 each (220 in all): exact
 * shares, deltas, scaled counts and colours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/report.h"
#include "report/report_diff.h"
#include "synth.h"

static char *written(const struct report_diff *d, const struct report_diff_opts *o,
                     int (*w)(const struct report_diff *, const struct report_diff_opts *, FILE *,
                              struct hv_err *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct hv_err err;
    if (w(d, o, f, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* The line of `text` that contains `needle`, copied (one line). */
static const char *line_with(const char *text, const char *needle)
{
    static char line[1024];
    const char *p = strstr(text, needle);
    if (!p)
        fail_msg("no line with '%s' in:\n%s", needle, text);
    const char *b = p;
    while (b > text && b[-1] != '\n')
        b--;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - b) : strlen(b);
    snprintf(line, sizeof(line), "%.*s", (int)n, b);
    return line;
}

static const struct diff_func *func(const struct report_diff *d, const char *name)
{
    for (size_t i = 0; i < d->funcs.n; i++)
        if (!strcmp(d->funcs.v[i].name, name))
            return &d->funcs.v[i];
    fail_msg("no function %s in the diff", name);
    return NULL;
}

static void test_same_profile(void **state)
{
    (void)state;
    struct profile a, b;
    assert_int_equal(synth_profile(&a), 100);
    assert_int_equal(synth_profile(&b), 100);
    struct report_diff d;
    struct hv_err err;
    assert_int_equal(report_diff_build(&a, &b, &d, &err), 0);
    assert_int_equal(d.base_total, 100);
    assert_int_equal(d.new_total, 100);
    for (size_t i = 0; i < d.nstacks; i++)
        assert_int_equal(d.stacks[i].base, d.stacks[i].new);
    for (size_t i = 0; i < d.funcs.n; i++) {
        assert_int_equal(d.funcs.v[i].base_self, d.funcs.v[i].new_self);
        assert_int_equal(d.funcs.v[i].base_total, d.funcs.v[i].new_total);
    }
    const struct diff_func *leaf = func(&d, "fixture_leaf");
    assert_int_equal(leaf->base_self, 60);
    assert_int_equal(func(&d, "fixture_middle")->base_total, 85);
    /* The folded diff holds `report --format folded`'s stacks and counts, twice. */
    struct report_diff_opts o = {.base_name = "a.fxt", .new_name = "b.fxt"};
    char *folded = written(&d, &o, report_diff_write_folded);
    char *plain = NULL;
    size_t plen = 0;
    FILE *f = open_memstream(&plain, &plen);
    assert_int_equal(report_write(REPORT_FOLDED, &a, NULL, f, &err), 0);
    fclose(f);
    size_t lines = 0;
    for (char *l = plain; *l; lines++) {
        char *e = strchr(l, '\n');
        *e = 0;
        char *sp = strrchr(l, ' ');
        char want[1200];
        snprintf(want, sizeof(want), "%.*s %s %s\n", (int)(sp - l), l, sp + 1, sp + 1);
        assert_non_null(strstr(folded, want));
        l = e + 1;
    }
    assert_int_equal(lines, d.nstacks);
    /* No change anywhere: every frame grey. */
    char *svg = written(&d, &o, report_diff_write_svg);
    assert_null(strstr(svg, "fill=\"rgb(255,"));
    assert_null(strstr(svg, ",255)\""));
    assert_non_null(strstr(svg, "fill=\"rgb(215,215,215)\""));
    free(svg);
    free(plain);
    free(folded);
    report_diff_free(&d);
    profile_free(&a);
    profile_free(&b);
}

static void test_hot_path_tripled(void **state)
{
    (void)state;
    struct profile a, b;
    synth_profile(&a);
    synth_profile(&b);
    for (size_t i = 0; i < 60; i++) /* synth.c adds the 60 hot samples first */
        b.samples.v[i].weight = 3;
    struct report_diff d;
    struct hv_err err;
    assert_int_equal(report_diff_build(&a, &b, &d, &err), 0);
    assert_int_equal(d.new_total, 220);
    const struct diff_func *leaf = func(&d, "fixture_leaf"), *mid = func(&d, "fixture_middle");
    assert_int_equal(leaf->new_self, 180);
    assert_int_equal(mid->new_self, 25);
    assert_int_equal(mid->new_total, 205);

    struct report_diff_opts o = {.base_name = "a.fxt", .new_name = "b.fxt"};
    char *top = written(&d, &o, report_diff_write_top);
    /* 60/100 -> 180/220 = 81.82 %: +21.82 points; middle's self 25 % -> 11.36 %, its children
     * 85 % -> 93.18 %. The largest change of self share comes first. */
    assert_non_null(strstr(top, "base a.fxt (100 samples), new b.fxt (220 samples)"));
    assert_non_null(strstr(line_with(top, "fixture_leaf"),
                           "60.00%   81.82%  +21.82%     60.00%   81.82%  +21.82%"));
    assert_non_null(strstr(line_with(top, "fixture_middle"),
                           "25.00%   11.36%  -13.64%     85.00%   93.18%   +8.18%"));
    assert_true(strstr(top, "fixture_leaf") < strstr(top, "fixture_middle"));
    free(top);

    /* Scaled by default: the hot stack's 60 base samples count 60 * 220 / 100 = 132. */
    char *folded = written(&d, &o, report_diff_write_folded);
    assert_non_null(strstr(folded, ";fixture_leaf 132 180\n"));
    assert_non_null(strstr(folded, ";fixture_middle 55 25\n"));
    free(folded);
    o.raw = true;
    folded = written(&d, &o, report_diff_write_folded);
    assert_non_null(strstr(folded, ";fixture_leaf 60 180\n"));
    assert_non_null(strstr(folded, ";fixture_middle 25 25\n"));
    free(folded);
    o.raw = false;

    /* The hot leaf grew most (deepest red), the warm path's leaf shrank (blue). */
    char *svg = written(&d, &o, report_diff_write_svg);
    const char *hot = strstr(svg, "data-n=\"fixture_leaf\"");
    assert_non_null(hot);
    assert_non_null(strstr(line_with(hot, "data-n=\"fixture_leaf\""), "fill=\"rgb(255,0,0)\""));
    assert_non_null(strstr(svg, "red: more, blue: less"));
    assert_non_null(strstr(svg, ",255)\""));
    free(svg);
    report_diff_free(&d);
    profile_free(&a);
    profile_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_profile),
        cmocka_unit_test(test_hot_path_tripled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
