/* 64 vCPUs, as cloud VMs have, on a 4-CPU outer VM, sampled at 100 Hz per vCPU (6,400 exits/s).
 * The emulated platform itself resets most such guests somewhere in their boot, under QEMU/KVM
 * as under hvprof (docs/linux.md, "Many vCPUs"), so every hvprof boot runs beside the reference
 * VMM's boot of the same kernel and command line in the same L1 (matrix.c, NAME-ref).
 *
 * What is asserted is what the test claims: hvprof profiles a 64-vCPU guest. At least one of
 * each kernel's hvprof boots completes with all 64 CPUs online, a clean recording and samples
 * from every one of the 64 vCPUs. A boot that did not complete (reset, crawl or hang until
 * --timeout, no user-mode exits) counts as the platform's only when the reference VMM failed
 * in the same runs too: hvprof failures beside a reference that completed every boot fail the
 * test. A
 * kernel whose boots neither VMM completed fails too ("cannot be tested here"): a test that
 * cannot show what it claims never passes. Every run finds all 64 CPUs in the ACPI MADT
 * ("smpboot: Allowing 64 CPUs", 0.1 s into the boot), and hvprof itself never errs or hangs.
 *
 * The emulated platform also kills the outer VM (L1) under these guests (docs/linux.md); the
 * test bed boots a fresh L1 for the runs left, six L1 boots here; a run still missing then is
 * lost with L1, and counts neither way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

/* hvprof stopped the guest at its --timeout (exit 124, "guest stopped (timeout)"): a clean stop
 * with the recording kept. */
static bool timed_out(const struct tb_result *r)
{
    return r->status == 124 && r->summary && strstr(r->summary, "guest stopped (timeout)");
}

/* hvprof's runs of one kernel: completed (checked), and not completed (the platform's only with
 * the reference's evidence). */
struct smp64_count {
    unsigned completed, failed, lost;
};

/* The 64-vCPU checks of one completed hvprof run: the boot, the recording, and samples from
 * every vCPU. */
static void check_completed(const struct tb_result *r, const struct tb_scenario *s)
{
    tb_check_boot(r, s);
    tb_check_recording(r);
    unsigned sampled = tb_vcpus_sampled(r);
    if (sampled != s->vcpus)
        fail_msg("%s: samples from %u of the %u vCPUs", r->name, sampled, s->vcpus);
    printf("%s: %u CPUs up, samples from all %u vCPUs, %.1f s for the whole boot under hvprof "
           "record\n",
           r->name, r->cpus, sampled, r->seconds);
}

/* Why an hvprof or reference run did not complete, printed; false when it did. */
static bool not_completed(const struct tb_result *r, bool reference)
{
    if (reference) {
        if (r->status == 0 && r->done && r->cpus == 64)
            return false;
        printf("%s: QEMU/KVM did not complete the boot (status %d, %s, %u CPUs up)\n", r->name,
               r->status, !r->userspace ? "no /init" : !r->done ? "workloads unfinished" : "done",
               r->cpus);
        return true;
    }
    if (tb_triple_fault(r)) {
        printf("%s: guest reset by the emulated platform after %.1f s\n", r->name, r->seconds);
        return true;
    }
    if (timed_out(r)) {
        /* hvprof's --timeout stopped a guest before /init, before its workloads finished or
         * in its restart: on the emulated platform a 64-vCPU boot can crawl (one run: 40 s of
         * guest time in 300 s, all 64 CPUs up) or hang (docs/linux.md). Where it was: the
         * console's end. */
        const char *end = r->console ? r->console + strlen(r->console) : NULL;
        for (int l = 0; end && l < 3 && end > r->console; l++)
            for (end--; end > r->console && end[-1] != '\n'; end--)
                ;
        printf("%s: the guest did not %s before hvprof's --timeout; its console ends:\n%s\n",
               r->name,
               !r->userspace ? "reach user space"
               : !r->done    ? "finish its workloads"
                             : "finish its restart after its workloads",
               end ? end : "");
        return true;
    }
    if (tb_starved(r)) {
        printf("%s: no user-mode exits (the emulated platform, docs/linux.md)\n", r->name);
        return true;
    }
    return false;
}

static void test_smp64(void **state)
{
    (void)state;
    setenv("HVPROF_TB_SMP", "4", 1);
    /* A faulted boot is counted, not booted again: the reference's boots get one attempt too. */
    setenv("HVPROF_TB_FAULT_ATTEMPTS", "1", 1);
    setenv("HVPROF_TB_L1_BOOTS", tb_full() ? "6" : "3", 1);
    /* A 64-vCPU boot takes 30-90 s when it completes, 300 s when it crawls: 30 minutes for all
     * L1 boots in the full matrix (three runs of four scenarios), 15 for one run each. */
    setenv("HVPROF_TB_DEADLINE", tb_full() ? "1800" : "900", 1);
    char out[4096];
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned runs;
    size_t n = tb_run_group("smp64", 3, sel, &runs, out, sizeof(out));
    unsetenv("HVPROF_TB_SMP");
    unsetenv("HVPROF_TB_FAULT_ATTEMPTS");
    unsetenv("HVPROF_TB_L1_BOOTS");
    unsetenv("HVPROF_TB_DEADLINE");
    for (size_t i = 0; i < n; i++) {
        if (strcmp(sel[i].cmd, "record"))
            continue;
        /* Its reference: the scenario named NAME-ref. */
        char refname[80];
        snprintf(refname, sizeof(refname), "%s-ref", sel[i].name);
        const struct tb_scenario *ref = NULL;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(sel[j].name, refname))
                ref = &sel[j];
        if (!ref)
            fail_msg("%s: no reference scenario %s in the smp64 group", sel[i].name, refname);
        struct smp64_count hv = {0}, qemu = {0};
        unsigned found64 = 0;
        for (unsigned k = 1; k <= runs; k++)
            for (int side = 0; side < 2; side++) {
                const struct tb_scenario *s = side ? ref : &sel[i];
                struct smp64_count *c = side ? &qemu : &hv;
                char name[96];
                if (runs > 1)
                    snprintf(name, sizeof(name), "%s.%u", s->name, k);
                else
                    snprintf(name, sizeof(name), "%s", s->name);
                struct tb_result r;
                tb_load(&r, out, name);
                if (!r.present) {
                    printf("%s: the outer VM died in each of its boots\n", name);
                    c->lost++;
                } else {
                    found64 += strstr(r.console, "smpboot: Allowing 64 CPUs") != NULL;
                    if (not_completed(&r, side)) {
                        c->failed++;
                    } else {
                        if (!side)
                            check_completed(&r, s);
                        c->completed++;
                    }
                }
                tb_free(&r);
            }
        printf("%s, 64 vCPUs: hvprof completed %u, failed %u, lost %u; QEMU/KVM completed %u, "
               "failed %u, lost %u\n",
               sel[i].name, hv.completed, hv.failed, hv.lost, qemu.completed, qemu.failed,
               qemu.lost);
        if (!found64)
            fail_msg("%s: no run reported 64 CPUs from the ACPI tables", sel[i].name);
        if (!hv.completed && !qemu.completed)
            fail_msg("%s: neither hvprof nor QEMU/KVM completed a 64-vCPU boot in %u runs each: "
                     "the platform cannot test 64 vCPUs here (run again, or on hardware)",
                     sel[i].name, runs);
        if (!hv.completed)
            fail_msg("%s: QEMU/KVM completed %u 64-vCPU boots in the same L1s, hvprof none",
                     sel[i].name, qemu.completed);
        /* The reference's failures are the evidence that the platform fails these boots; a
         * reference that completed every boot leaves hvprof's failures hvprof's. */
        if (hv.failed && !qemu.failed)
            fail_msg("%s: hvprof failed %u boots, QEMU/KVM completed all of its %u in the same "
                     "L1s: the failures are hvprof's",
                     sel[i].name, hv.failed, qemu.completed);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_smp64)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
