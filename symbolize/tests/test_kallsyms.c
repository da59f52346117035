/* kallsyms / System.map parsing and the KASLR slide from MSR_LSTAR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "symbolize/kallsyms.h"
#include "testutil.h"

static void test_parse_file(void **state)
{
    (void)state;
    struct symtab t;
    symtab_init(&t);
    char path[4096];
    snprintf(path, sizeof(path), "%s/kallsyms.txt", FIXTURE_SRC);
    assert_int_equal(kallsyms_load_file(&t, path, NULL), 0);
    /* 9 text lines, _text/startup_64 share an address; the data symbol and junk are skipped. */
    assert_int_equal(t.n, 8);
    const struct sym *s = symtab_lookup(&t, 0xffffffff81200050ull);
    assert_non_null(s);
    assert_string_equal(symtab_name(&t, s), "do_syscall_64");
    s = symtab_lookup(&t, 0xffffffff81000010ull);
    assert_string_equal(symtab_name(&t, s), "_text"); /* global aliases: shortest name */
    s = symtab_lookup(&t, 0xffffffffc0000004ull);
    assert_string_equal(symtab_name(&t, s), "mod_func"); /* module suffix dropped */
    s = symtab_lookup(&t, 0xffffffff81600000ull); /* data symbol not a boundary: weak_func? */
    assert_string_equal(symtab_name(&t, s), "entry_SYSCALL_64_after_hwframe");
    assert_null(symtab_lookup(&t, 0xffffffff80000000ull));
    symtab_free(&t);
}

static void test_slide(void **state)
{
    (void)state;
    static const char map[] = "ffffffff81000000 T _text\n"
                              "ffffffff81a00000 T entry_SYSCALL_64\n"
                              "ffffffff81b00000 T next_func\n";
    struct symtab t;
    symtab_init(&t);
    assert_int_equal(kallsyms_parse(&t, map, sizeof(map) - 1, NULL), 0);
    int64_t slide = 0;
    assert_int_equal(kallsyms_kaslr_slide(&t, 0xffffffff8fa00000ull, &slide, NULL), 0);
    assert_int_equal(slide, 0xe000000);
    /* The slid address resolves after subtracting the slide. */
    const struct sym *s = symtab_lookup(&t, 0xffffffff8fa00040ull - (uint64_t)slide);
    assert_string_equal(symtab_name(&t, s), "entry_SYSCALL_64");
    /* Same boot's /proc/kallsyms: slide 0. */
    assert_int_equal(kallsyms_kaslr_slide(&t, 0xffffffff81a00000ull, &slide, NULL), 0);
    assert_int_equal(slide, 0);
    struct hv_err err;
    assert_int_equal(kallsyms_kaslr_slide(&t, 0x401000, &slide, &err), -1);
    assert_non_null(strstr(err.msg, "not a kernel address"));
    symtab_free(&t);

    symtab_init(&t);
    static const char no_entry[] = "ffffffff81000000 T _text\n";
    assert_int_equal(kallsyms_parse(&t, no_entry, sizeof(no_entry) - 1, NULL), 0);
    assert_int_equal(kallsyms_kaslr_slide(&t, 0xffffffff81000000ull, &slide, &err), -1);
    assert_non_null(strstr(err.msg, "entry_SYSCALL_64"));
    symtab_free(&t);
}

static void test_rejects_non_symbol_text(void **state)
{
    (void)state;
    struct symtab t;
    symtab_init(&t);
    static const char text[] = "hello world\n\x7f"
                               "ELF\x02\x01\n12345678901234567 T too_long\n";
    struct hv_err err;
    assert_int_equal(kallsyms_parse(&t, text, sizeof(text) - 1, &err), -1);
    assert_non_null(strstr(err.msg, "no text symbols"));
    /* Every prefix of a valid line parses or fails cleanly (no overread). */
    static const char line[] = "ffffffff81000000 T _text";
    for (size_t n = 0; n <= sizeof(line) - 1; n++) {
        struct symtab u;
        symtab_init(&u);
        int rc = kallsyms_parse(&u, line, n, NULL);
        assert_int_equal(rc, n >= 20 ? 0 : -1);
        symtab_free(&u);
    }
    symtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_file),
        cmocka_unit_test(test_slide),
        cmocka_unit_test(test_rejects_non_symbol_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
