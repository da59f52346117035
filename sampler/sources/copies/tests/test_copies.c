/* The copied-stacks source on its own (sampler/sources/copies/): the queues it gives the exit
 * core, and nothing to do while they are empty. The walks of real copies are tested with the
 * exit path (sampler/tests/test_sample.c), which fills the queues. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_copied_stacks;

static void test_copies_queues(void **state)
{
    (void)state;
    struct fake_env f;
    fake_env_init(&f, 3);
    assert_true(rec_source_copied_stacks.wanted(&f.cfg));
    f.cfg.mode = SAMPLER_MODE_EXITS;
    assert_false(rec_source_copied_stacks.wanted(&f.cfg)); /* no stacks walked */
    f.cfg.mode = SAMPLER_MODE_CPU;
    f.cfg.ring_bytes = 1u << 20;
    assert_false(rec_source_copied_stacks.wanted(&f.cfg)); /* a flight recorder */
    f.cfg.ring_bytes = 0;
    fake_env_create(&f, &rec_source_copied_stacks, false);
    for (unsigned i = 0; i < 3; i++) {
        uint32_t n = f.core.v[i].copies.nslots;
        assert_non_null(f.core.v[i].copies.slot);
        assert_true(n >= 16 && (n & (n - 1)) == 0);
        assert_true((uint64_t)n * 3 <= EXIT_COPY_ALL_SLOTS || n == 16);
    }
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, 1000, true), 0);
    char summary[256];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_string_equal(summary, ""); /* nothing copied: nothing to say */
    rec_source_copied_stacks.destroy(f.st);
    for (unsigned i = 0; i < 3; i++)
        assert_null(f.core.v[i].copies.slot);
    f.ops = NULL; /* destroyed above */
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copies_queues),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
