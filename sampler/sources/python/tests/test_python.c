/* The python source on its own (sampler/sources/python/): what it hands the exit core, and
 * what it makes of looks that find no interpreter and of records without Python frames. The
 * interpreters themselves are read from real CPython processes on the Linux test bed
 * (tests/linux/test_linux_python.c) and from python/'s own tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guestwalk/paging.h"
#include "guestwalk/tests/guest_image.h"
#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_python;

static void test_python_no_interpreter(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    struct fake_env f;
    fake_env_init(&f, 1);
    assert_true(rec_source_python.wanted(&f.cfg));
    f.cfg.no_python = true;
    assert_false(rec_source_python.wanted(&f.cfg));
    f.cfg.no_python = false;
    f.env.mem = &g.mem;
    assert_null(f.core.py);
    fake_env_create(&f, &rec_source_python, false);
    assert_non_null(f.core.py); /* handed to the exit core at create */
    struct guestos_as as = {PT_CR0_PE | PT_CR0_PG, g.root, PT_CR4_PAE, PT_EFER_LME | PT_EFER_LMA,
                            -1};
    /* A module not named as an interpreter is not looked into; one named so whose dynamic
     * symbols cannot be read (nothing mapped) is not one either. */
    struct discover_module m[2] = {
        {.start = 0x400000, .end = 0x401000, .name = "/usr/bin/bash"},
        {.start = 0x500000, .end = 0x501000, .name = "/usr/bin/python3.11"},
    };
    rec_source_python.address_space(f.st, &f.env, 1, &as, m, 2);
    assert_null(exit_py_runtime(f.core.py, 1));
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, true), 0);
    /* A sample without Python frames names nothing. */
    uint64_t rec[16];
    struct hvfxt_sample smp = {
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS, .pid = 1, .tid = 1, .ts = 1};
    size_t n = hvfxt_enc_sample(rec, 16, &smp);
    struct hv_err err = {0};
    assert_int_equal(rec_source_python.visit(f.st, &f.env, rec, (uint32_t)n, &err), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_PYCODE, NULL), 0);
    char summary[256];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_string_equal(summary, "");
    fake_env_fini(&f);
    gimg_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_no_interpreter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
