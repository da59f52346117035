/* The runtimes source on its own (sampler/sources/runtimes/): the table it hands the exit core,
 * what its runtimes make of looks that find no interpreter, and its dispatch of a sample's
 * runtime frames to their runtime's record half. Interpreters themselves are read from real
 * CPython processes on the Linux test bed (tests/linux/tests/test_linux_python.c) and from
 * python/'s own tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guestwalk/paging.h"
#include "guestwalk/tests/guest_image.h"
#include "runtime/runtime.h"
#include "sampler/exit/runtime_stack.h"
#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_runtimes;

static void test_runtimes_no_interpreter(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    struct fake_env f;
    fake_env_init(&f, 1);
    assert_true(runtime_python_record.wanted(&f.cfg));
    f.cfg.no_python = true;
    assert_false(runtime_python_record.wanted(&f.cfg));
    f.cfg.no_python = false;
    f.env.mem = &g.mem;
    assert_null(f.core.rt);
    fake_env_create(&f, &rec_source_runtimes, false);
    assert_non_null(f.core.rt); /* handed to the exit core at create */
    struct guestos_as as = {PT_CR0_PE | PT_CR0_PG, g.root, PT_CR4_PAE, PT_EFER_LME | PT_EFER_LMA,
                            -1};
    /* A module not named as an interpreter is not looked into; one named so whose dynamic
     * symbols cannot be read (nothing mapped) is not one either. */
    struct discover_module m[2] = {
        {.start = 0x400000, .end = 0x401000, .name = "/usr/bin/bash"},
        {.start = 0x500000, .end = 0x501000, .name = "/usr/bin/python3.11"},
    };
    rec_source_runtimes.address_space(f.st, &f.env, 1, &as, m, 2);
    assert_null(exit_runtime_of(f.core.rt, 1));
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, true), 0);
    struct hv_err err = {0};
    /* A sample without runtime frames, one with Python's of a process whose interpreter was
     * never read, and one of a runtime this recording does not read: nothing named. */
    uint64_t rec[64];
    struct hvfxt_sample smp = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS,
                               .pid = hvfxt_koid_guest_process(1),
                               .tid = 1,
                               .ts = 1};
    size_t n = hvfxt_enc_sample(rec, 64, &smp);
    assert_int_equal(rec_source_runtimes.visit(f.st, &f.env, rec, (uint32_t)n, &err), 0);
    uint64_t frames[] = {HVFXT_RUNTIME_PYTHON, 0x7f0000001000, 0x7f0000002000};
    smp.fields |= HVFXT_SF_RUNTIME_STACK;
    smp.rt_stack = frames;
    smp.n_rt = 3;
    n = hvfxt_enc_sample(rec, 64, &smp);
    assert_int_equal(rec_source_runtimes.visit(f.st, &f.env, rec, (uint32_t)n, &err), 0);
    frames[0] = 9;
    n = hvfxt_enc_sample(rec, 64, &smp);
    assert_int_equal(rec_source_runtimes.visit(f.st, &f.env, rec, (uint32_t)n, &err), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_CODE, NULL), 0);
    char summary[256];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_string_equal(summary, "");
    fake_env_fini(&f);
    gimg_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtimes_no_interpreter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
