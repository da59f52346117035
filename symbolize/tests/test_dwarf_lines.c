/* Source lines from DWARF (symbolize/dwarf_lines.h) against binutils' addr2line on real files the
 * host compiler built: for every function of each fixture, at several addresses in it, the file
 * and line equal the outermost frame `addr2line -i` prints (an inlined call's site in the
 * function it was inlined into), and the function's declaration is its own file. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbolize/dwarf_lines.h"
#include "symbolize/elf_symbols.h"
#include "testutil.h"

/* addr2line's outermost frame for addr: "file:line" (its last line, discriminator dropped);
 * the number of frames it printed in *frames. */
static bool addr2line(const char *file, uint64_t addr, char *out, size_t len, int *frames)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "addr2line -i -e '%s' 0x%" PRIx64, file, addr);
    int st;
    char *o = run_capture(cmd, &st);
    if (!o || st != 0) {
        free(o);
        return false;
    }
    *frames = 0;
    char *last = o;
    for (char *l = strtok(o, "\n"); l; l = strtok(NULL, "\n")) {
        last = l;
        (*frames)++;
    }
    char *d = strstr(last, " (discriminator");
    if (d)
        *d = 0;
    snprintf(out, len, "%s", last);
    bool ok = !strstr(out, "??");
    free(o);
    return ok;
}

/* Compares every function of `name` at its start, a quarter and half way in. Returns the
 * addresses compared; *inlined counts those addr2line showed inside inlined code, *with_func
 * those inside a DWARF function (whose declaration is then checked too). */
static unsigned compare_file(const char *name, unsigned *inlined, unsigned *with_func)
{
    const char *path = fixture(name);
    struct elf_symbols es;
    struct hv_err err = {0};
    assert_int_equal(elf_symbols_load_file(&es, path, &err), 0);
    struct dwarf_lines *d = NULL;
    assert_int_equal(dwarf_lines_open(&d, path, &err), 0);
    assert_non_null(d);
    unsigned compared = 0;
    for (size_t i = 0; i < es.syms.n; i++) {
        const struct sym *s = &es.syms.v[i];
        for (unsigned k = 0; k < 3; k++) {
            uint64_t a = s->addr + (s->size * k) / 4;
            char want[2048], got[2048];
            int frames = 0;
            struct src_line sl;
            bool have = dwarf_lines_lookup(d, a, &sl);
            if (!addr2line(path, a, want, sizeof(want), &frames)) {
                assert_false(have); /* neither knows the address */
                continue;
            }
            if (!have)
                fail_msg("%s 0x%" PRIx64 " (%s): no line, addr2line says %s", name, a,
                         symtab_name(&es.syms, s), want);
            snprintf(got, sizeof(got), "%s:%u", sl.file, sl.line);
            if (strcmp(got, want))
                fail_msg("%s 0x%" PRIx64 " (%s): %s, addr2line says %s", name, a,
                         symtab_name(&es.syms, s), got, want);
            /* Assembly functions (bound.S) have lines but no DWARF function. */
            if (sl.func_file) {
                assert_string_equal(sl.func_file, sl.file);
                assert_true(sl.func_line > 0 && sl.func_line <= sl.line);
                (*with_func)++;
            }
            compared++;
            *inlined += frames > 1;
        }
    }
    dwarf_lines_close(d);
    elf_symbols_free(&es);
    return compared;
}

static void test_against_addr2line(void **state)
{
    (void)state;
    unsigned inlined = 0, n = 0, with_func = 0;
    const char *files[] = {"prog_static", "prog_static.debug", "libfix.so", "kernel_standin",
                           "prog_inline"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        n += compare_file(files[i], &inlined, &with_func);
    printf("%u addresses equal addr2line's outermost frame, %u of them in inlined code, %u in "
           "a DWARF function\n",
           n, inlined, with_func);
    assert_true(n >= 30);
    assert_true(inlined >= 1);
    assert_true(with_func >= n / 2);
}

/* Every frame `addr2line -i -f` prints for addr, innermost first: "name file:line" each. */
static unsigned addr2line_chain(const char *file, uint64_t addr, char frames[][2048], unsigned max)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "addr2line -i -f -e '%s' 0x%" PRIx64, file, addr);
    int st;
    char *o = run_capture(cmd, &st);
    unsigned n = 0;
    char *save = NULL, *name = o && st == 0 ? strtok_r(o, "\n", &save) : NULL;
    while (name && n < max) {
        char *at = strtok_r(NULL, "\n", &save);
        if (!at)
            break;
        char *d = strstr(at, " (discriminator");
        if (d)
            *d = 0;
        snprintf(frames[n++], 2048, "%s %s", name, at);
        name = strtok_r(NULL, "\n", &save);
    }
    free(o);
    return n;
}

/* The inlined frames themselves (src_line.inl), each as addr2line -i -f prints it: name and
 * line in order, innermost first, then the function's own line at the outermost call site. */
static void test_inline_frames(void **state)
{
    (void)state;
    const char *path = fixture("prog_inline");
    struct elf_symbols es;
    struct hv_err err = {0};
    assert_int_equal(elf_symbols_load_file(&es, path, &err), 0);
    struct dwarf_lines *d = NULL;
    assert_int_equal(dwarf_lines_open(&d, path, &err), 0);
    assert_non_null(d);
    unsigned chains = 0, compared = 0;
    for (size_t i = 0; i < es.syms.n; i++) {
        const struct sym *s = &es.syms.v[i];
        for (uint64_t a = s->addr; a < s->addr + s->size; a++) {
            char want[SRC_INLINE_MAX + 2][2048];
            unsigned n = addr2line_chain(path, a, want, SRC_INLINE_MAX + 2);
            struct src_line sl;
            if (!n || !dwarf_lines_lookup(d, a, &sl))
                continue;
            assert_int_equal(sl.ninl + 1, n);
            char got[2048];
            for (unsigned k = 0; k < sl.ninl; k++) {
                snprintf(got, sizeof(got), "%s %s:%u", sl.inl[k].name, sl.inl[k].file,
                         sl.inl[k].line);
                assert_string_equal(got, want[k]);
                assert_non_null(sl.inl[k].decl_file);
                assert_true(sl.inl[k].decl_line > 0);
            }
            snprintf(got, sizeof(got), "%s %s:%u", symtab_name(&es.syms, s), sl.file, sl.line);
            assert_string_equal(got, want[n - 1]);
            chains += sl.ninl > 0;
            compared++;
        }
    }
    printf("%u addresses of prog_inline equal addr2line -i -f frame by frame, %u with inlined "
           "frames\n",
           compared, chains);
    assert_true(chains >= 3);
    dwarf_lines_close(d);
    elf_symbols_free(&es);
}

static void test_inline_call_site(void **state)
{
    (void)state;
    /* inline_caller's loop body is inline_step's code: its line is the call in inline_caller,
     * and the function is inline_caller's, in inline.c. */
    const char *path = fixture("prog_inline");
    struct elf_symbols es;
    struct hv_err err = {0};
    assert_int_equal(elf_symbols_load_file(&es, path, &err), 0);
    struct dwarf_lines *d = NULL;
    assert_int_equal(dwarf_lines_open(&d, path, &err), 0);
    unsigned at_call = 0;
    for (size_t i = 0; i < es.syms.n; i++) {
        const struct sym *s = &es.syms.v[i];
        if (strcmp(symtab_name(&es.syms, s), "inline_caller"))
            continue;
        for (uint64_t a = s->addr; a < s->addr + s->size; a++) {
            struct src_line sl;
            if (!dwarf_lines_lookup(d, a, &sl))
                continue;
            assert_non_null(strstr(sl.file, "inline.c"));
            assert_int_equal(sl.func_line, 10); /* long inline_caller(...) */
            assert_true(sl.line >= 10 && sl.line <= 15);
            at_call += sl.line == 13; /* x = inline_step(x); */
        }
    }
    assert_true(at_call > 0);
    dwarf_lines_close(d);
    elf_symbols_free(&es);
}

static void test_no_dwarf(void **state)
{
    (void)state;
    struct dwarf_lines *d = (struct dwarf_lines *)1;
    struct hv_err err = {0};
    /* A stripped library: no lines, not an error. */
    assert_int_equal(dwarf_lines_open(&d, fixture("libfix_stripped.so"), &err), 0);
    assert_null(d);
    struct src_line sl;
    assert_false(dwarf_lines_lookup(NULL, 0x1000, &sl));
    /* A file that is not there: an error naming it. */
    assert_int_equal(dwarf_lines_open(&d, "/nonexistent/hvprof-no-such-file", &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/hvprof-no-such-file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_addr2line),
        cmocka_unit_test(test_inline_call_site),
        cmocka_unit_test(test_inline_frames),
        cmocka_unit_test(test_no_dwarf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
