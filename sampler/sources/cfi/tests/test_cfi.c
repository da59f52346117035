/* The cfi source on its own (sampler/sources/cfi/): the maps it publishes to the exit core
 * after a look at an address space. A module without .eh_frame_hdr gets no table and is in the
 * map all the same (the exit path then walks it with frame pointers, without waiting). A map
 * replaced, or whose process ended, is retired (freed after the exit core's grace). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guestwalk/cfi_unwind.h"
#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_cfi;

static void test_cfi_maps(void **state)
{
    (void)state;
    struct fake_env f;
    fake_env_init(&f, 1);
    assert_null(f.core.cfi);
    fake_env_create(&f, &rec_source_cfi, false);
    assert_non_null(f.core.cfi); /* handed to the exit core at create */
    assert_null(exit_cfi_current(f.core.cfi, 1));
    struct guestos_as as = {0};
    struct discover_module m[2] = {
        {.start = 0x400000, .end = 0x401000, .name = "prog"},
        {.start = 0x7f0000000000, .end = 0x7f0000002000, .name = "libfoo.so"},
    };
    rec_source_cfi.address_space(f.st, &f.env, 1, &as, m, 2);
    const struct gw_cfi_map *map = exit_cfi_current(f.core.cfi, 1);
    assert_non_null(map);
    assert_int_equal(map->n, 2);
    assert_int_equal(map->m[0].lo, 0x400000);
    assert_null(map->m[0].t);
    /* The same modules again: the map in place stays. */
    rec_source_cfi.address_space(f.st, &f.env, 1, &as, m, 2);
    assert_ptr_equal(exit_cfi_current(f.core.cfi, 1), map);
    assert_int_equal(f.retired, 0);
    /* Another module: a new map, the old one retired (walks may still use it). */
    m[1].end = 0x7f0000003000;
    rec_source_cfi.address_space(f.st, &f.env, 1, &as, m, 2);
    assert_ptr_not_equal(exit_cfi_current(f.core.cfi, 1), map);
    assert_int_equal(f.retired, 1);
    /* Its process ended: unpublished and retired; another process's is untouched. */
    rec_source_cfi.address_space(f.st, &f.env, 2, &as, m, 2);
    rec_source_cfi.process_ended(f.st, &f.env, 1);
    assert_null(exit_cfi_current(f.core.cfi, 1));
    assert_non_null(exit_cfi_current(f.core.cfi, 2));
    assert_int_equal(f.retired, 2);
    rec_source_cfi.process_ended(f.st, &f.env, 1); /* nothing left to retire */
    assert_int_equal(f.retired, 2);
    /* No process, or out of range: nothing. */
    rec_source_cfi.address_space(f.st, &f.env, 0, &as, m, 2);
    rec_source_cfi.address_space(f.st, &f.env, ID_MAX_PROCS + 1, &as, m, 2);
    char summary[256];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_string_equal(summary, ""); /* nothing compiled, no walks */
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfi_maps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
