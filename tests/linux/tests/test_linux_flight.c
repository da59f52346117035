/* `record --ring` on a Debian kernel that panics (the magic SysRq crash, tests/linux/l2_init.sh
 * plan=panic): hvprof sees the panic in the kernel's own record of it (panic_cpu), says so in
 * the summary and the recording, and the flight recording — the last MiB of samples — ends on
 * the panic's path, named from the guest's memory. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/fxt_load.h"
#include "report/profile.h"
#include "tests/linux/testbed.h"

static bool in_panic_path(const char *fn)
{
    return !strcmp(fn, "panic") || !strcmp(fn, "vpanic") || !strcmp(fn, "sysrq_handle_crash");
}

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    (void)s;
    (void)ctx;
    if (!strstr(r->console, "HVTEST panicking") || !strstr(r->console, "sysrq triggered crash"))
        fail_msg("%s: the guest did not panic as planned:\n%.3000s", r->name, r->console);
    if (strstr(r->console, "HVTEST still running after the panic"))
        fail_msg("%s: the guest went on after its panic", r->name);
    if (!strstr(r->summary, "the guest kernel panicked on CPU "))
        fail_msg("%s: the summary does not tell the panic:\n%s", r->name, r->summary);
    if (!strstr(r->summary, "flight recorder: "))
        fail_msg("%s: no flight recorder line:\n%s", r->name, r->summary);
    struct profile p;
    profile_init(&p);
    struct fxt_load_stats st;
    struct hv_err err = {0};
    if (fxt_load_profile_file(r->rec, &p, &st, NULL, NULL, &err) < 0 ||
        profile_symbolize(&p, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
    assert_true(st.panic && st.session_stop);
    /* 1 MiB of samples: the guest's boot did not fit, the last seconds did. */
    assert_true(st.overwritten > 0);
    assert_true(p.samples.n > 500);
    uint64_t last = 0, in_panic = 0, first_panic = UINT64_MAX;
    for (size_t i = 0; i < p.samples.n; i++)
        if (p.samples.v[i].ts > last)
            last = p.samples.v[i].ts;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *smp = &p.samples.v[i];
        for (uint32_t j = 0; j < smp->nframes; j++) {
            const struct prof_frame *f = &p.frames.v[smp->first + j];
            if (f->loc == PROF_NONE || !p.locs.v[f->loc].resolved ||
                !in_panic_path(p.funcs.v[p.locs.v[f->loc].func].name))
                continue;
            in_panic++;
            if (smp->ts < first_panic)
                first_panic = smp->ts;
            break;
        }
    }
    printf("%s: %zu samples kept, %" PRIu64 " records overwritten; %" PRIu64
           " samples in the panic's path, the first %.1f ms before the last sample; panic seen "
           "on CPU %u\n",
           r->name, p.samples.n, st.overwritten, in_panic,
           first_panic <= last ? (double)(last - first_panic) / 1e6 : -1.0, st.panic_cpu);
    if (!in_panic)
        fail_msg("%s: no sample in panic / sysrq_handle_crash", r->name);
    /* The panic's path is where the recording ends: the kernel printing its panic to the
     * serial console, then restarting (panic=-1). */
    assert_true(last - first_panic < 5000000000ull);
    profile_free(&p);
}

static void test_panic_in_flight_recording(void **state)
{
    (void)state;
    char out[4096];
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("flight", 1, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_panic_in_flight_recording)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
