/* The exit-events source on its own (sampler/sources/exit_events/): wanted only with
 * `record --events exits`; its summary from the exit core's counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/sources/tests/fake_env.h"
#include "vmm/exit_sites.h"

extern const struct rec_source_ops rec_source_exit_events;

static void test_exit_events_summary(void **state)
{
    (void)state;
    struct fake_env f;
    fake_env_init(&f, 2);
    assert_false(rec_source_exit_events.wanted(&f.cfg));
    f.cfg.exit_events = true;
    assert_true(rec_source_exit_events.wanted(&f.cfg));
    fake_env_create(&f, &rec_source_exit_events, false);
    struct hv_err err = {0};
    /* No VM (a test's recorder): no sites to name, nothing written. */
    assert_int_equal(rec_source_exit_events.begin(f.st, &f.env, &err), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 0);
    for (unsigned i = 0; i < 2; i++) {
        f.core.v[i].st.exit_events = 10;
        f.core.v[i].st.exit_stacks = 5;
        f.core.v[i].st.t_exit_events = 20000;
        f.core.v[i].st.vmm_exits[VM_EXIT_PIO_OUT] = 7;
        f.core.v[i].st.vmm_exits[VM_EXIT_HLT] = 3;
    }
    char summary[1024];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "exit events: 20 recorded, 10 with the guest's stacks (while "
                                    "their walks took at most 5% of the vCPU's time"));
    assert_non_null(strstr(summary, "2.00 us of hvprof's time each"));
    assert_non_null(strstr(summary, "14 pio out"));
    assert_non_null(strstr(summary, "6 hlt"));
    f.core.cfg.exit_every = 4;
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "(every 4th of a vCPU's exits)"));
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_events_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
