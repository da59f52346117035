/* Symbol search paths: the .build-id/xx/rest.debug layout, a scan of plain files matched by
 * build-id, and name matching for modules without one. Real files in a temp directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/elf_symbols.h"
#include "symbolize/symbol_path.h"
#include "testutil.h"

static void sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    assert_int_equal(system(cmd), 0);
}

static void build_id_of(const char *path, uint8_t id[ELF_BUILD_ID_MAX], uint32_t *len)
{
    int n = elf_read_build_id_file(path, id, NULL);
    assert_int_equal(n, 20);
    *len = (uint32_t)n;
}

static void test_build_id_tree(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    assert_non_null(dir);
    uint8_t id[ELF_BUILD_ID_MAX];
    uint32_t len;
    build_id_of(fixture("prog_static.debug"), id, &len);
    char hex[41];
    elf_build_id_hex(id, len, hex);
    /* debuginfod-style: .build-id/xx/rest.debug is a symlink to the real file. */
    sh("mkdir -p '%s/.build-id/%.2s' '%s/files' && cp '%s' '%s/files/prog_static.debug' && "
       "ln -s ../../files/prog_static.debug '%s/.build-id/%.2s/%s.debug'",
       dir, hex, dir, fixture("prog_static.debug"), dir, dir, hex, hex + 2);
    struct symbol_path sp;
    symbol_path_init(&sp);
    assert_int_equal(symbol_path_add_dir(&sp, dir, NULL), 0);
    char *found = symbol_path_find(&sp, id, len, "[elf@0x400000]");
    assert_non_null(found);
    assert_non_null(strstr(found, "/.build-id/"));
    uint8_t got[ELF_BUILD_ID_MAX];
    assert_int_equal(elf_read_build_id_file(found, got, NULL), 20);
    assert_memory_equal(got, id, 20);
    free(found);
    /* A different build-id is not found there. */
    id[0] ^= 0xff;
    assert_null(symbol_path_find(&sp, id, len, NULL));
    symbol_path_free(&sp);
    remove_temp_dir(dir);
}

static void test_plain_scan_and_names(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    /* Files under arbitrary names, plus non-ELF noise. */
    sh("cp '%s' '%s/renamed.bin' && cp '%s' '%s/prog_static' && echo hello > '%s/notes.txt'",
       fixture("libfix_stripped.so"), dir, fixture("prog_static"), dir, dir);
    struct symbol_path sp;
    symbol_path_init(&sp);
    struct hv_err err;
    assert_int_equal(symbol_path_add_dir(&sp, dir, &err), 0);
    uint8_t id[ELF_BUILD_ID_MAX];
    uint32_t len;
    build_id_of(fixture("libfix.so"), id, &len); /* strip keeps the id */
    char *found = symbol_path_find(&sp, id, len, "libfix.so.1");
    assert_non_null(found);
    assert_non_null(strstr(found, "renamed.bin"));
    free(found);
    /* Without a build-id: by base name. */
    found = symbol_path_find(&sp, NULL, 0, "/some/guest/path/prog_static");
    assert_non_null(found);
    assert_non_null(strstr(found, "/prog_static"));
    free(found);
    /* With a build-id that disagrees, the same name is refused. */
    uint8_t wrong[20] = {1, 2, 3};
    assert_null(symbol_path_find(&sp, wrong, 20, "prog_static"));
    /* A directory that does not exist is an error at add time. */
    assert_int_equal(symbol_path_add_dir(&sp, "/nonexistent/hvprof", &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/hvprof"));
    symbol_path_free(&sp);
    remove_temp_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_id_tree),
        cmocka_unit_test(test_plain_scan_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
