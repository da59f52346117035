/* symbolize/source.h on the toolchain's fixture files: a module's ELF file found on a symbol path
 * by build-id (another build refused), the recording's own symbols as the fallback an ELF file
 * replaces, a kernel from a vmlinux or from kallsyms text, and source lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbolize/source.h"
#include "testutil.h"

/* The fixture directory as a symbol path. */
static void path_of_fixtures(struct symbol_path *sp)
{
    symbol_path_init(sp);
    struct hv_err err;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", fixture("prog_static"));
    *strrchr(dir, '/') = 0;
    assert_int_equal(symbol_path_add_dir(sp, dir, &err), 0);
}

static void build_id_of(const char *path, uint8_t id[ELF_BUILD_ID_MAX], uint32_t *len)
{
    struct elf_symbols es;
    assert_int_equal(elf_symbols_load_file(&es, path, NULL), 0);
    memcpy(id, es.build_id, es.build_id_len);
    *len = es.build_id_len;
    elf_symbols_free(&es);
}

static void test_recorded_then_file(void **state)
{
    (void)state;
    const char *path = fixture("prog_static");
    uint64_t leaf = nm_address(path, "fixture_leaf");
    struct sym_source s = {0};
    struct sym_hit hit;
    /* Nothing yet. */
    assert_false(sym_source_lookup(&s, leaf, false, &hit));
    assert_null(sym_source_symtab(&s));
    /* The recording's symbols (as guest memory gave them): one, named differently. */
    struct hv_err err = {0};
    assert_int_equal(sym_source_add(&s, leaf, "from_memory", 11, 2, &err), 0);
    sym_source_finish(&s);
    assert_true(sym_source_lookup(&s, leaf + 5, false, &hit));
    assert_string_equal(hit.name, "from_memory");
    assert_int_equal(hit.offset, 5);
    assert_false(sym_source_has_file(&s));
    char origin[4200];
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), "the recording");
    /* The file of the same build wins. */
    uint8_t id[ELF_BUILD_ID_MAX];
    uint32_t idlen;
    build_id_of(path, id, &idlen);
    struct symbol_path sp;
    path_of_fixtures(&sp);
    assert_int_equal(sym_source_find(&s, &sp, id, idlen, "prog_static", &err), 1);
    assert_true(sym_source_has_file(&s));
    assert_non_null(strstr(s.file, "prog_static"));
    char want[4200];
    snprintf(want, sizeof(want), "%s (.symtab)", s.file);
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), want);
    assert_true(sym_source_lookup(&s, leaf + 3, false, &hit));
    assert_string_equal(hit.name, "fixture_leaf");
    assert_int_equal(hit.offset, 3);
    /* More recorded symbols are ignored once the file is there. */
    assert_int_equal(sym_source_add(&s, leaf, "late", 4, 2, &err), 0);
    assert_true(sym_source_lookup(&s, leaf, false, &hit));
    assert_string_equal(hit.name, "fixture_leaf");
    sym_source_free(&s);
    symbol_path_free(&sp);
}

/* A file found by name whose build-id is not the recorded one is no candidate. */
static void test_other_build(void **state)
{
    (void)state;
    struct symbol_path sp;
    path_of_fixtures(&sp);
    uint8_t id[20];
    memset(id, 0xab, sizeof(id));
    struct sym_source s = {0};
    struct hv_err err = {0};
    assert_int_equal(sym_source_find(&s, &sp, id, sizeof(id), "prog_static", &err), 0);
    assert_false(sym_source_has_file(&s));
    assert_null(s.file);
    sym_source_free(&s);
    symbol_path_free(&sp);
}

static void test_kernel_files(void **state)
{
    (void)state;
    const char *vmlinux = fixture("kernel_standin");
    uint8_t id[ELF_BUILD_ID_MAX];
    uint32_t idlen;
    build_id_of(vmlinux, id, &idlen);
    struct sym_source s = {0};
    struct hv_err err = {0};
    assert_int_equal(sym_source_load_kernel(&s, vmlinux, id, idlen, &err), 0);
    uint64_t a = nm_address(vmlinux, "fixture_leaf");
    struct sym_hit hit;
    assert_true(sym_source_lookup(&s, a + 1, false, &hit));
    assert_string_equal(hit.name, "fixture_leaf");
    /* Another build: refused, with the path, and what was loaded stays. */
    id[0] ^= 0xff;
    assert_int_equal(sym_source_load_kernel(&s, vmlinux, id, idlen, &err), -1);
    assert_non_null(strstr(err.msg, "build-id differs from the recorded guest kernel's"));
    assert_true(sym_source_lookup(&s, a + 1, false, &hit));
    /* kallsyms text replaces it. */
    char ks[4096];
    snprintf(ks, sizeof(ks), "%s/kallsyms.txt", FIXTURE_SRC);
    assert_int_equal(sym_source_load_kernel(&s, ks, NULL, 0, &err), 0);
    assert_false(sym_source_has_file(&s));
    assert_non_null(sym_source_symtab(&s));
    assert_non_null(strstr(s.file, "kallsyms.txt"));
    char origin[4200], want[4200];
    snprintf(want, sizeof(want), "%s (kallsyms text)", ks);
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), want);
    sym_source_free(&s);
}

/* Source lines from the file's DWARF, opened on first use. */
static void test_lines(void **state)
{
    (void)state;
    const char *path = fixture("prog_static");
    uint8_t id[ELF_BUILD_ID_MAX];
    uint32_t idlen;
    build_id_of(path, id, &idlen);
    struct symbol_path sp;
    path_of_fixtures(&sp);
    struct sym_source s = {0};
    struct hv_err err = {0};
    assert_int_equal(sym_source_find(&s, &sp, id, idlen, "prog_static", &err), 1);
    uint64_t leaf = nm_address(path, "fixture_leaf");
    struct sym_hit hit;
    assert_true(sym_source_lookup(&s, leaf, false, &hit));
    assert_false(s.lines_tried);
    assert_null(hit.line.file);
    assert_true(sym_source_lookup(&s, leaf, true, &hit));
    assert_true(s.lines_tried);
    assert_non_null(hit.line.file);
    assert_non_null(strstr(hit.line.file, "prog.c"));
    assert_true(hit.line.line > 0);
    sym_source_free(&s);
    symbol_path_free(&sp);
}

/* Where the names come from (report -v): a stripped file's MiniDebugInfo, a debuginfod
 * client's cache file, a file with only .dynsym, nothing at all. */
static void load_as(struct sym_source *s, const char *path)
{
    *s = (struct sym_source){0};
    s->elf = calloc(1, sizeof(*s->elf));
    assert_non_null(s->elf);
    assert_int_equal(elf_symbols_load_file(s->elf, path, NULL), 0);
    s->file = strdup(path);
}

static void test_origins(void **state)
{
    (void)state;
    char origin[4400], want[4400];
    struct sym_source s = {0};
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), "none");
    load_as(&s, fixture("prog_minidebuginfo"));
    snprintf(want, sizeof(want), "%s (MiniDebugInfo)", fixture("prog_minidebuginfo"));
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), want);
    sym_source_free(&s);
    load_as(&s, fixture("libfix_stripped.so"));
    snprintf(want, sizeof(want), "%s (.dynsym)", fixture("libfix_stripped.so"));
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), want);
    sym_source_free(&s);
    /* A debuginfod cache's layout, <cache>/<build-id>/debuginfo. */
    char *dir = make_temp_dir();
    char id[129], sub[4200], file[4300], cmd[9000];
    assert_true(readelf_build_id(fixture("prog_static"), id, sizeof(id)) > 0);
    snprintf(sub, sizeof(sub), "%s/%s", dir, id);
    snprintf(file, sizeof(file), "%s/debuginfo", sub);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s' '%s'", sub, fixture("prog_static"), file);
    assert_int_equal(system(cmd), 0);
    load_as(&s, file);
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), "debuginfod (.symtab)");
    sym_source_free(&s);
    /* The same name outside a build-id directory is a file like any other. */
    snprintf(file, sizeof(file), "%s/debuginfo", dir);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fixture("prog_static"), file);
    assert_int_equal(system(cmd), 0);
    load_as(&s, file);
    snprintf(want, sizeof(want), "%s (.symtab)", file);
    assert_string_equal(sym_source_origin(&s, origin, sizeof(origin)), want);
    sym_source_free(&s);
    remove_temp_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_then_file),
        cmocka_unit_test(test_other_build),
        cmocka_unit_test(test_kernel_files),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_origins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
