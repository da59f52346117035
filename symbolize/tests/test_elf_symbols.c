/* ELF symbol loading and lookup on real files built by the toolchain (tests/fixtures). */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbolize/elf_symbols.h"
#include "testutil.h"

static void lookup_is(const struct symtab *t, uint64_t addr, const char *name, uint64_t off)
{
    const struct sym *s = symtab_lookup(t, addr);
    assert_non_null(s);
    assert_string_equal(symtab_name(t, s), name);
    assert_int_equal(addr - s->addr, off);
}

static void test_static_program(void **state)
{
    (void)state;
    const char *path = fixture("prog_static");
    struct elf_symbols es;
    struct hv_err err;
    assert_int_equal(elf_symbols_load_file(&es, path, &err), 0);
    assert_true(es.has_symtab);
    assert_int_equal(es.e_type, ET_EXEC);
    assert_int_equal(es.link_base, 0x400000);

    /* The build-id is the one readelf reports. */
    char want[130], got[130];
    assert_int_equal(readelf_build_id(path, want, sizeof(want)), 40);
    assert_int_equal(es.build_id_len, 20);
    elf_build_id_hex(es.build_id, es.build_id_len, got);
    assert_string_equal(got, want);

    static const char *const funcs[] = {
        "fixture_leaf", "fixture_middle", "fixture_outer",        "fixture_local_static",
        "fixture_main", "_start",         "fixture_calls_at_end", "fixture_next_function"};
    for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
        uint64_t a = nm_address(path, funcs[i]);
        assert_true(a >= 0x400000);
        lookup_is(&es.syms, a, funcs[i], 0);
    }
    uint64_t leaf = nm_address(path, "fixture_leaf");
    lookup_is(&es.syms, leaf + 3, "fixture_leaf", 3);
    /* Untyped code labels count (asm entry points); section-end markers such as _end do not. */
    uint64_t label = nm_address(path, "fixture_asm_label");
    assert_true(label != 0);
    lookup_is(&es.syms, label + 2, "fixture_asm_label", 2);
    assert_null(symtab_find_name(&es.syms, "_end"));
    /* Below the first function nothing resolves. */
    assert_null(symtab_lookup(&es.syms, 0x1000));
    elf_symbols_free(&es);
}

/* A call as the last instruction: its return address is the next function's first byte. The
 * exact address names the next function; the return address (looked up at ra - 1) the caller. */
static void test_return_address_at_boundary(void **state)
{
    (void)state;
    const char *path = fixture("prog_static");
    struct elf_symbols es;
    assert_int_equal(elf_symbols_load_file(&es, path, NULL), 0);
    uint64_t next = nm_address(path, "fixture_next_function");
    uint64_t caller = nm_address(path, "fixture_calls_at_end");
    assert_int_equal(next - caller, 5); /* one call rel32 */
    lookup_is(&es.syms, next, "fixture_next_function", 0);
    lookup_is(&es.syms, next - 1, "fixture_calls_at_end", 4);
    elf_symbols_free(&es);
}

static void test_stripped_dynsym_only(void **state)
{
    (void)state;
    struct elf_symbols full, stripped;
    assert_int_equal(elf_symbols_load_file(&full, fixture("libfix.so"), NULL), 0);
    assert_int_equal(elf_symbols_load_file(&stripped, fixture("libfix_stripped.so"), NULL), 0);
    assert_true(full.has_symtab);
    assert_false(stripped.has_symtab);
    assert_int_equal(stripped.e_type, ET_DYN);
    /* strip keeps the build-id note. */
    assert_int_equal(stripped.build_id_len, 20);
    assert_memory_equal(stripped.build_id, full.build_id, 20);
    uint64_t leaf = nm_address(fixture("libfix.so"), "fixture_leaf");
    uint64_t local = nm_address(fixture("libfix.so"), "fixture_local_static");
    assert_true(leaf != 0 && local != 0);
    lookup_is(&stripped.syms, leaf + 1, "fixture_leaf", 1);
    /* A local function is only in .symtab: the full file names it, the stripped one cannot. */
    lookup_is(&full.syms, local, "fixture_local_static", 0);
    const struct sym *s = symtab_lookup(&stripped.syms, local);
    assert_true(s == NULL || strcmp(symtab_name(&stripped.syms, s), "fixture_local_static"));
    assert_null(symtab_find_name(&stripped.syms, "fixture_local_static"));
    assert_non_null(symtab_find_name(&full.syms, "fixture_local_static"));
    elf_symbols_free(&full);
    elf_symbols_free(&stripped);
}

static void test_from_memory_matches_file(void **state)
{
    (void)state;
    size_t len;
    void *buf = read_file(fixture("prog_static"), &len);
    assert_non_null(buf);
    struct elf_symbols a, b;
    assert_int_equal(elf_symbols_load_file(&a, fixture("prog_static"), NULL), 0);
    assert_int_equal(elf_symbols_load_mem(&b, buf, len, NULL), 0);
    assert_int_equal(a.syms.n, b.syms.n);
    assert_memory_equal(a.build_id, b.build_id, 20);
    for (size_t i = 0; i < a.syms.n; i++) {
        assert_int_equal(a.syms.v[i].addr, b.syms.v[i].addr);
        assert_string_equal(symtab_name(&a.syms, &a.syms.v[i]), symtab_name(&b.syms, &b.syms.v[i]));
    }
    /* Truncations never crash; those past the ELF header are rejected as corrupt (report
     * branches on it: an unusable symbol file is skipped, an allocation failure is not). */
    struct hv_err err = {0};
    for (size_t cut = 1; cut < len; cut = cut * 3 / 2 + 1) {
        struct elf_symbols c;
        if (elf_symbols_load_mem(&c, buf, cut, &err) == 0)
            elf_symbols_free(&c);
        else if (cut >= 64 && hv_err_kind(&err) != HV_ERR_CORRUPT)
            fail_msg("cut at %zu: \"%s\" is of kind %s", cut, err.msg,
                     hv_err_kind_name(hv_err_kind(&err)));
    }
    char junk[256];
    memset(junk, 0x41, sizeof(junk));
    struct elf_symbols j;
    assert_int_equal(elf_symbols_load_mem(&j, junk, sizeof(junk), &err), -1);
    assert_non_null(strstr(err.msg, "not an ELF"));
    assert_int_equal(hv_err_kind(&err), HV_ERR_CORRUPT);
    elf_symbols_free(&a);
    elf_symbols_free(&b);
    free(buf);
}

static void test_notes_parser(void **state)
{
    (void)state;
    /* A foreign note, then GNU build-id (namesz 4, descsz 8, type 3). */
    uint8_t n[64] = {0};
    uint32_t h1[3] = {5, 4, 1}; /* "ABCD\0" padded to 8, desc 4 */
    memcpy(n, h1, 12);
    memcpy(n + 12, "ABCD", 5);
    memcpy(n + 20, "\1\2\3\4", 4);
    uint32_t h2[3] = {4, 8, NT_GNU_BUILD_ID};
    memcpy(n + 24, h2, 12);
    memcpy(n + 36, "GNU", 4);
    memcpy(n + 40, "\xde\xad\xbe\xef\x01\x02\x03\x04", 8);
    uint8_t id[ELF_BUILD_ID_MAX];
    assert_int_equal(elf_notes_find_build_id(n, 48, id), 8);
    assert_memory_equal(id, "\xde\xad\xbe\xef\x01\x02\x03\x04", 8);
    /* Every truncation: no id, no overread (ASan). */
    for (size_t len = 0; len < 48; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, n, len);
        assert_int_equal(elf_notes_find_build_id(copy, len, id), 0);
        free(copy);
    }
    /* A huge descsz is rejected, not trusted. */
    uint32_t bad[3] = {4, 0xfffffff0u, NT_GNU_BUILD_ID};
    memcpy(n + 24, bad, 12);
    assert_int_equal(elf_notes_find_build_id(n, 48, id), 0);
}

static void test_symtab_semantics(void **state)
{
    (void)state;
    struct symtab t;
    symtab_init(&t);
    /* Aliases at one address: the global one wins; an unsized label extends to the next. */
    assert_int_equal(symtab_add(&t, 0x1000, 0x10, "local_alias", 11, 0, NULL), 0);
    assert_int_equal(symtab_add(&t, 0x1000, 0x10, "global_name", 11, 2, NULL), 0);
    assert_int_equal(symtab_add(&t, 0x1100, 0, "asm_label", 9, 2, NULL), 0);
    assert_int_equal(symtab_add(&t, 0x1200, 0x20, "sized", 5, 2, NULL), 0);
    symtab_finish(&t);
    assert_int_equal(t.n, 3);
    lookup_is(&t, 0x1000, "global_name", 0);
    assert_null(symtab_lookup(&t, 0x1010)); /* past the sized function, before the label */
    lookup_is(&t, 0x11ff, "asm_label", 0xff);
    lookup_is(&t, 0x121f, "sized", 0x1f);
    assert_null(symtab_lookup(&t, 0x1220));
    assert_non_null(symtab_find_name(&t, "asm_label"));
    assert_null(symtab_find_name(&t, "local_alias"));
    symtab_free(&t);
}

/* A stripped binary with MiniDebugInfo (make_minidebuginfo.sh, Fedora's recipe): its local
 * functions named from .gnu_debugdata at the addresses the full binary has them; the same
 * binary stripped without it has none; from memory the same as from the file; a section that
 * does not unpack (its xz stream cut) leaves the file loading, without those names. */
static void test_minidebuginfo(void **state)
{
    (void)state;
    struct elf_symbols full, mini, bare;
    assert_int_equal(elf_symbols_load_file(&full, fixture("prog_static"), NULL), 0);
    assert_int_equal(elf_symbols_load_file(&mini, fixture("prog_minidebuginfo"), NULL), 0);
    assert_int_equal(elf_symbols_load_file(&bare, fixture("prog_stripped"), NULL), 0);
    assert_true(mini.has_symtab && mini.from_minidebuginfo);
    assert_false(bare.has_symtab);
    static const char *const names[] = {"fixture_leaf", "fixture_middle", "fixture_outer",
                                        "fixture_main", "fixture_local_static"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct sym *f = symtab_find_name(&full.syms, names[i]);
        const struct sym *m = symtab_find_name(&mini.syms, names[i]);
        if (!f || !m || f->addr != m->addr)
            fail_msg("%s: at %#llx in the full binary, %s in the MiniDebugInfo one", names[i],
                     f ? (unsigned long long)f->addr : 0ull, m ? "elsewhere" : "absent");
        assert_null(symtab_find_name(&bare.syms, names[i]));
    }
    size_t len;
    uint8_t *img = read_file(fixture("prog_minidebuginfo"), &len);
    assert_non_null(img);
    struct elf_symbols frommem;
    assert_int_equal(elf_symbols_load_mem(&frommem, img, len, NULL), 0);
    assert_int_equal(frommem.syms.n, mini.syms.n);
    elf_symbols_free(&frommem);
    /* Cut the xz stream: the section's last 64 bytes zeroed. */
    const uint8_t xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0};
    uint8_t *xz = memmem(img, len, xz_magic, sizeof(xz_magic));
    assert_non_null(xz);
    memset(xz + 64, 0, 64);
    assert_int_equal(elf_symbols_load_mem(&frommem, img, len, NULL), 0);
    assert_false(frommem.from_minidebuginfo);
    assert_null(symtab_find_name(&frommem.syms, "fixture_leaf"));
    elf_symbols_free(&frommem);
    free(img);
    elf_symbols_free(&full);
    elf_symbols_free(&mini);
    elf_symbols_free(&bare);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_program),
        cmocka_unit_test(test_return_address_at_boundary),
        cmocka_unit_test(test_stripped_dynsym_only),
        cmocka_unit_test(test_minidebuginfo),
        cmocka_unit_test(test_from_memory_matches_file),
        cmocka_unit_test(test_notes_parser),
        cmocka_unit_test(test_symtab_semantics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
