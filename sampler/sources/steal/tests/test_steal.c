/* The steal source on its own (sampler/sources/steal/): this test's own thread stands for a
 * vCPU thread, its schedstat read from /proc as the source reads a vCPU's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_steal;

/* A marker every 0.1 s while the vCPU runs, one more at its stop with the summary's number,
 * none after; none for a vCPU not started. Not with a flight recorder. */
static void test_steal_markers(void **state)
{
    (void)state;
    struct fake_env f;
    fake_env_init(&f, 2);
    assert_true(rec_source_steal.wanted(&f.cfg));
    f.cfg.ring_bytes = 1u << 20;
    assert_false(rec_source_steal.wanted(&f.cfg));
    f.cfg.ring_bytes = 0;
    fake_env_create(&f, &rec_source_steal, false);
    struct vcpu_stats *st = &f.core.v[0].st;
    atomic_store(&st->host_tid, gettid());
    uint64_t t = 1000000000ull;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, t, false), 0);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, t + 50000000ull, false), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_OTHER, HVFXT_VCPU_STEAL), 1);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, t + 100000000ull, false), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_OTHER, HVFXT_VCPU_STEAL), 2);
    st->steal_known = true;
    st->steal_ns = 1234;
    atomic_store(&f.core.v[0].stopped, true);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, t + 150000000ull, false), 0);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, t + 900000000ull, true), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_OTHER, HVFXT_VCPU_STEAL), 3);
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steal_markers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
