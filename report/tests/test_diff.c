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

/* The width the SVG draws for the frame path `prefix` ("proc;a;b"): the folded lines' larger
 * count summed over the stacks under it; their base and new sums too. */
static void folded_under(const char *folded, const char *prefix, uint64_t *widest, uint64_t *base,
                         uint64_t *now)
{
    *widest = *base = *now = 0;
    size_t n = strlen(prefix);
    for (const char *l = folded; *l;) {
        const char *e = strchr(l, '\n');
        const char *sp2 = e;
        while (sp2 > l && sp2[-1] != ' ')
            sp2--;
        const char *sp1 = sp2 - 1;
        while (sp1 > l && sp1[-1] != ' ')
            sp1--;
        size_t stack_len = (size_t)(sp1 - 1 - l);
        if (stack_len >= n && !strncmp(l, prefix, n) && (stack_len == n || l[n] == ';')) {
            uint64_t b = strtoull(sp1, NULL, 10), w = strtoull(sp2, NULL, 10);
            *widest += b > w ? b : w;
            *base += b;
            *now += w;
        }
        l = e + 1;
    }
}

/* Code that vanished: NEW lacks BASE's 5 samples at an unnamed address. The SVG draws the
 * union of both recordings: every frame exactly as wide as the larger count of each stack under
 * it in the folded output (so never narrower than either recording there), the gone frame at
 * its BASE width and blue, with a legend; --widths new draws NEW's alone. */
static void test_vanished_code_drawn(void **state)
{
    (void)state;
    struct profile a, b;
    synth_profile(&a);
    synth_profile(&b);
    size_t w = 0;
    for (size_t i = 0; i < b.samples.n; i++)
        if (i < 85 || i >= 90) /* synth.c: samples 85..89 are the only ones in prog_static */
            b.samples.v[w++] = b.samples.v[i];
    b.samples.n = w;
    struct report_diff d;
    struct hv_err err;
    assert_int_equal(report_diff_build(&a, &b, &d, &err), 0);
    struct report_diff_opts o = {.base_name = "a.fxt", .new_name = "b.fxt"};
    char *folded = written(&d, &o, report_diff_write_folded);
    char *svg = written(&d, &o, report_diff_write_svg);
    assert_non_null(strstr(svg, "id=\"legend\""));
    assert_non_null(strstr(svg, "gone from NEW: drawn at its BASE width"));
    char path[64][256];
    size_t checked = 0;
    bool gone_blue = false;
    for (const char *g = strstr(svg, "<g class=\"f\" data-n=\""); g;
         g = strstr(g + 1, "<g class=\"f\" data-n=\"")) {
        char name[256];
        unsigned long long x, width;
        unsigned depth;
        assert_int_equal(sscanf(g,
                                "<g class=\"f\" data-n=\"%255[^\"]\" data-x=\"%llu\" "
                                "data-w=\"%llu\" data-d=\"%u\"",
                                name, &x, &width, &depth),
                         4);
        assert_true(depth < 64);
        int len = snprintf(path[depth], sizeof(path[depth]), "%s%s%s",
                           depth > 1 ? path[depth - 1] : "", depth > 1 ? ";" : "", name);
        assert_true(len > 0 && (size_t)len < sizeof(path[depth]));
        if (depth == 0)
            continue;
        uint64_t widest, base, now;
        folded_under(folded, path[depth], &widest, &base, &now);
        if (width != widest || width < base || width < now)
            fail_msg("%s: drawn %llu wide, the folded stacks under it: larger %llu, base %llu, "
                     "new %llu",
                     path[depth], width, (unsigned long long)widest, (unsigned long long)base,
                     (unsigned long long)now);
        if (now == 0 && base > 0) /* gone from NEW: blue */
            gone_blue |= strstr(line_with(g, "data-n="), ",255)\"") != NULL;
        checked++;
    }
    assert_true(checked >= 8);
    assert_true(gone_blue);
    free(svg);
    o.widths = REPORT_DIFF_WIDTHS_NEW;
    svg = written(&d, &o, report_diff_write_svg);
    assert_non_null(strstr(svg, "widths: the NEW samples"));
    free(svg);
    free(folded);
    report_diff_free(&d);
    profile_free(&a);
    profile_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_profile),
        cmocka_unit_test(test_hot_path_tripled),
        cmocka_unit_test(test_vanished_code_drawn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
