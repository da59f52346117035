/* Off-CPU time of every guest thread (`record --off-cpu`, docs/off-cpu.md) on Debian's kernel:
 * hv_offcpu's writer blocks in fsync on the virtio disk beside a CPU-bound thread, among 200
 * sleeping processes, and measures itself from the kernel's own account
 * (/proc/thread-self/schedstat: its time on the CPU) and its wall time. The time hvprof recorded
 * for the writer off its CPU in its fsync stack (kernel frames from its switch frame, user
 * frames from its entry registers, down to write_and_sync) must be the guest's wall minus CPU
 * time within 5 %; every sleeper has its time in its nanosleep stack; each off-CPU stack ends in
 * a frame naming the thread's state. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/fxt_load.h"
#include "report/profile.h"
#include "schema/schema.h"
#include "tests/linux/testbed.h"

struct totals {
    unsigned runs;
};

static const char *frame_fn(const struct profile *p, const struct prof_sample *s, uint32_t k)
{
    const struct prof_frame *fr = &p->frames.v[s->first + k];
    const struct prof_loc *l = fr->loc == PROF_NONE ? NULL : &p->locs.v[fr->loc];
    return l && l->resolved ? p->funcs.v[l->func].name : NULL;
}

static bool has_fn(const struct profile *p, const struct prof_sample *s, const char *name)
{
    for (uint32_t k = 0; k < s->nframes; k++) {
        const char *fn = frame_fn(p, s, k);
        if (fn && !strcmp(fn, name))
            return true;
    }
    return false;
}

/* Google's pprof on `report --off-cpu --format pprof`: its sample type, and the writer's time in
 * write_and_sync's stacks through fsync (libc's or the kernel's) in ms as pprof adds it up (the
 * consumers_pprof fixture builds pprof). */
static double pprof_fsync_ms(const struct tb_result *r, long tid)
{
    char bin[PATH_MAX], pprof[PATH_MAX], prof[PATH_MAX + 16], cmd[8 * PATH_MAX];
    tb_pprof_paths(bin, pprof);
    snprintf(prof, sizeof(prof), "%s.off.pb.gz", r->rec);
    snprintf(cmd, sizeof(cmd),
             "'%s/cli/hvprof' report --off-cpu '%s' --format pprof -o '%s' -q && "
             "HOME=/nonexistent '%s' -top -cum -unit=ms -focus='^(fsync|__x64_sys_fsync)$' "
             "-tagfocus=tid=%ld -nodecount=1000 '%s' 2>/dev/null",
             bin, r->rec, prof, pprof, tid, prof);
    FILE *p = popen(cmd, "r");
    if (!p)
        fail_msg("%s: cannot run pprof", r->name);
    char line[1024];
    bool typed = false;
    double ms = -1;
    while (fgets(line, sizeof(line), p)) {
        typed |= !strncmp(line, "Type: off_cpu", 13);
        double cum;
        char name[256];
        if (sscanf(line, " %*s %*s %*s %lfms %*s %255s", &cum, name) == 2 &&
            !strcmp(name, "write_and_sync"))
            ms = cum;
    }
    int st = pclose(p);
    if (st != 0 || !typed || ms < 0)
        fail_msg("%s: pprof (exit %d) %s", r->name, st,
                 typed ? "shows no write_and_sync in fsync" : "does not read an off_cpu profile");
    return ms;
}

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    struct totals *t = ctx;
    tb_check_boot(r, s);
    char *ref = tb_reference(s->kernel, s->vcpus);
    tb_check_console_clean(r, s, ref);
    free(ref);
    const char *tl = strstr(r->console, "HVTEST offcpu tasks ");
    if (!tl || atoi(tl + strlen("HVTEST offcpu tasks ")) < 200)
        fail_msg("%s: the guest did not run its 200 sleepers:\n%s", r->name, r->console);
    const char *wl = strstr(r->console, "HVTEST offcpu tid=");
    long tid = 0, fsyncs = 0;
    long long wall = 0, run = 0, wait = 0, fsync_ns = 0;
    if (!wl || sscanf(wl,
                      "HVTEST offcpu tid=%ld wall_ns=%lld run_ns=%lld wait_ns=%lld "
                      "fsync_ns=%lld fsyncs=%ld",
                      &tid, &wall, &run, &wait, &fsync_ns, &fsyncs) != 6)
        fail_msg("%s: no account of the writer on the console:\n%s", r->name, r->console);
    if (fsyncs < 50 || wall <= run)
        fail_msg("%s: the writer made %ld fsyncs, wall %lld ns, CPU %lld ns", r->name, fsyncs, wall,
                 run);
    const char *sl = strstr(r->summary, "  off-CPU: ");
    unsigned long long visits = 0;
    if (!sl || sscanf(sl, "  off-CPU: %llu visits", &visits) != 1 || visits < 50)
        fail_msg("%s: no off-CPU visits in the summary:\n%s", r->name, r->summary);

    struct profile p;
    profile_init(&p);
    p.off_cpu = true;
    struct hv_err err = {0};
    struct fxt_load_stats st;
    if (fxt_load_profile_file(r->rec, &p, &st, NULL, NULL, &err) < 0 ||
        profile_symbolize(&p, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
    uint64_t writer = 0, in_fsync = 0, states[HVFXT_TASK_STATES + 1] = {0};
    /* The sleepers: distinct threads whose time is in their nanosleep. */
    uint64_t *sleepers = calloc(p.samples.n + 1, sizeof(*sleepers));
    size_t nsleepers = 0;
    assert_non_null(sleepers);
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        assert_true(sm->off_cpu_ns > 0 && sm->nframes > 0);
        /* The leaf names the state. */
        const char *leaf = frame_fn(&p, sm, 0);
        unsigned k;
        for (k = 0; k < HVFXT_TASK_STATES; k++) {
            char want[32];
            snprintf(want, sizeof(want), "[off-cpu:%s]", hvfxt_task_state_letter(k));
            if (leaf && !strcmp(leaf, want))
                break;
        }
        if (k == HVFXT_TASK_STATES)
            fail_msg("%s: an off-CPU stack's leaf is %s", r->name, leaf ? leaf : "unnamed");
        states[k] += sm->off_cpu_ns;
        if (profile_shown_tid(&p, sm->pid, sm->tid) == (uint64_t)tid) {
            writer += sm->off_cpu_ns;
            /* Its fsync stack: the loop's function, and fsync in libc or the kernel (a
             * preemption in libc's wrapper is off the CPU in fsync too). */
            if (has_fn(&p, sm, "writer") && has_fn(&p, sm, "write_and_sync") &&
                (has_fn(&p, sm, "fsync") || has_fn(&p, sm, "__x64_sys_fsync")))
                in_fsync += sm->off_cpu_ns;
        }
        if (has_fn(&p, sm, "hrtimer_nanosleep") &&
            !strcmp(profile_thread_name(&p, sm->pid, sm->tid), "busybox")) {
            size_t j = 0;
            while (j < nsleepers && sleepers[j] != sm->tid)
                j++;
            if (j == nsleepers)
                sleepers[nsleepers++] = sm->tid;
        }
    }
    free(sleepers);
    profile_free(&p);
    double guest = (double)(wall - run); /* the writer's own account of its time off the CPU */
    printf("%s: writer tid %ld: %.3f s off its CPU by its schedstat (wall %.3f s, CPU %.3f s, "
           "run queue %.3f s, %ld fsyncs); hvprof: %.3f s, %.3f s of it in its fsync stack "
           "(%+.2f %%); %zu sleepers in nanosleep; off-CPU time by state: R %.1f s, S %.1f s, "
           "D %.1f s, I %.1f s; %llu visits\n",
           r->name, tid, guest / 1e9, (double)wall / 1e9, (double)run / 1e9, (double)wait / 1e9,
           fsyncs, (double)writer / 1e9, (double)in_fsync / 1e9,
           100.0 * ((double)in_fsync - guest) / guest, nsleepers,
           (double)states[HVFXT_TASK_RUNNABLE] / 1e9, (double)states[HVFXT_TASK_SLEEPING] / 1e9,
           (double)states[HVFXT_TASK_DISK_SLEEP] / 1e9, (double)states[HVFXT_TASK_IDLE] / 1e9,
           visits);
    if (fabs((double)in_fsync - guest) > 0.05 * guest)
        fail_msg("%s: the writer's off-CPU time in fsync is %.3f s, the guest says %.3f s", r->name,
                 (double)in_fsync / 1e9, guest / 1e9);
    /* pprof adds up the same time (µs in the file, ms asked for). */
    double ms = pprof_fsync_ms(r, tid);
    printf("%s: pprof: %.2f ms in the fsync stack of tid %ld\n", r->name, ms, tid);
    if (fabs(ms * 1e6 - (double)in_fsync) > 0.01 * (double)in_fsync + 2e6)
        fail_msg("%s: pprof shows %.2f ms in fsync, the recording %.3f ms", r->name, ms,
                 (double)in_fsync / 1e6);
    if (nsleepers < 190)
        fail_msg("%s: %zu of the 200 sleepers have time in their nanosleep stack", r->name,
                 nsleepers);
    assert_true(states[HVFXT_TASK_DISK_SLEEP] > 0 && states[HVFXT_TASK_SLEEPING] > 0 &&
                states[HVFXT_TASK_IDLE] > 0);
    t->runs++;
}

static void test_off_cpu(void **state)
{
    (void)state;
    char out[4096];
    struct totals t = {0};
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("offcpu", 2, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, &t);
    assert_true(t.runs > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_off_cpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
