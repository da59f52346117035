/* Exit events (docs/exits.md): the test guest's hostile_pio writes port 0x80 from its kernel in
 * batches of 1000 and prints how many writes it made. `record --events exits` records each exit
 * the VMM handles; the summary's count of recorded events equals the VMM's own count of the
 * exits it handled, `report --exits` has exactly the guest's own number of writes at the site
 * "[exit:pio-out:post:0x80]" (nothing dropped), with the host time of each, and their stacks
 * rooted there reach the guest kernel's system call that made them. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest_run.h"
#include "record_run.h"
#include "tests/common/need_kvm.h"
#include "tests/common/run_cmd.h"

#define SITE "[exit:pio-out:post:0x80]"

/* every: --exit-stacks-every's value, or NULL for the default (a budget of walk time). */
static void check_exit_events(const char *every)
{
    struct record_result r;
    assert_int_equal(every ? record_run(&r, 0, 0, 0, "--vcpus", "1", "--hz", "250", "--events",
                                        "exits", "--exit-stacks-every", every, "--buffer", "8M",
                                        "--cmdline", "progs=hostile_pio seconds=2", NULL)
                           : record_run(&r, 0, 0, 0, "--vcpus", "1", "--hz", "250", "--events",
                                        "exits", "--buffer", "8M", "--cmdline",
                                        "progs=hostile_pio seconds=2", NULL),
                     0);
    assert_int_equal(r.status, 0);
    const char *g = strstr(r.console, "hostile_pio: pid=");
    if (!g)
        fail_msg("hostile_pio did not finish:\n%s", r.console);
    uint64_t outs;
    const char *k = strstr(g, "kernel_outs=");
    assert_non_null(k);
    assert_int_equal(sscanf(k, "kernel_outs=%" SCNu64, &outs), 1);
    assert_true(outs >= 1000);

    const char *l = strstr(r.summary, "  exit events: ");
    if (!l)
        fail_msg("no exit events line in the summary:\n%s", r.summary);
    uint64_t events, stacks, vmm[5];
    const char *h = strstr(l, "the VMM handled ");
    assert_non_null(h);
    assert_int_equal(sscanf(l, "  exit events: %" SCNu64 " recorded, %" SCNu64, &events, &stacks),
                     2);
    assert_int_equal(sscanf(h,
                            "the VMM handled %" SCNu64 " pio in, %" SCNu64 " pio out, %" SCNu64
                            " mmio read, %" SCNu64 " mmio write, %" SCNu64 " hlt",
                            &vmm[0], &vmm[1], &vmm[2], &vmm[3], &vmm[4]),
                     5);
    print_message("guest: %" PRIu64 " writes to port 0x80; hvprof: %" PRIu64
                  " exit events (%" PRIu64 " with stacks); VMM: %" PRIu64 " pio out\n",
                  outs, events, stacks, vmm[1]);
    /* Every exit the VMM handled is an event (the console's writes are pio out too). */
    assert_int_equal(events, vmm[0] + vmm[1] + vmm[2] + vmm[3] + vmm[4]);
    if (every)
        assert_int_equal(stacks, events);
    else /* as many as the budget allows: the first 10 ms of walks at least */
        assert_true(stacks >= 1 && stacks <= events);
    assert_true(vmm[1] >= outs);

    /* The table: exactly the guest's writes at the POST port's site. */
    static char out[1 << 20];
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s report --exits -q %s", guest_build_path("cli/hvprof"),
             r.out_path);
    assert_int_equal(hv_run_cmd(cmd, out, sizeof(out)), 0);
    const char *row = strstr(out, SITE);
    if (!row)
        fail_msg("no %s row in the exit table:\n%s", SITE, out);
    const char *bol = row;
    while (bol > out && bol[-1] != '\n')
        bol--;
    uint64_t n;
    double pct, host_ms, mean_us, max_us;
    assert_int_equal(
        sscanf(bol, "%" SCNu64 " %lf%% %lf %lf %lf", &n, &pct, &host_ms, &mean_us, &max_us), 5);
    print_message("%s: %" PRIu64 " exits, %.3f ms host time, mean %.2f us, max %.2f us\n", SITE, n,
                  host_ms, mean_us, max_us);
    assert_int_equal(n, outs);
    assert_true(mean_us > 0 && max_us >= mean_us);
    /* The table says how many exits have stacks when not all do: the summary's numbers. */
    char walked_line[128];
    snprintf(walked_line, sizeof(walked_line), "; walked for %" PRIu64 " of the %" PRIu64 " exits",
             stacks, events);
    assert_true((strstr(out, walked_line) != NULL) == (stacks < events));

    /* The stacks: rooted at the site, through the guest kernel's system call. */
    snprintf(cmd, sizeof(cmd), "%s report --exits --format folded -q %s",
             guest_build_path("cli/hvprof"), r.out_path);
    assert_int_equal(hv_run_cmd(cmd, out, sizeof(out)), 0);
    uint64_t rooted = 0, walked = 0, through = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        const char *sp = strrchr(line, ' ');
        const char *site = strstr(line, SITE);
        if (!sp || !site)
            continue;
        uint64_t c = strtoull(sp + 1, NULL, 10);
        rooted += c;
        walked += site[strlen(SITE)] == ';' ? c : 0; /* the site alone: no stacks walked */
        if (strstr(site, ";sys_hostile"))
            through += c;
    }
    print_message("%" PRIu64 " stacks rooted at %s, %" PRIu64 " with the guest's, %" PRIu64
                  " through sys_hostile\n",
                  rooted, SITE, walked, through);
    assert_int_equal(rooted, outs);
    if (every)
        assert_int_equal(walked, rooted);
    assert_true(walked > 0 && through * 100 >= walked * 95);
    record_result_free(&r);
}

static void test_exit_events(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    check_exit_events("1");
}

/* By default the walks are kept within their budget: every exit is still recorded and timed,
 * and those walked have the whole stack. */
static void test_exit_events_budget(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    check_exit_events(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_events),
        cmocka_unit_test(test_exit_events_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
