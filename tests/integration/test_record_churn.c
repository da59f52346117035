/* A busy guest's churn (docs/identities.md): the test guest's `churn` program spawns 3,000
 * short-lived processes and creates 3,000 short-lived threads (each with an FS base of its own)
 * while `workload` works beside them, through identity tables of 1,024 processes and 8,192
 * threads. The recorder must end the identities that are gone and give their slots back:
 * - no lookup finds a table full, no sample is unattributed, identities are ended in the trace;
 * - every process's user samples are one program's (the workload's all under one identity, each
 *   child's under its own), every churn thread's under a thread identity of its own FS base;
 * - each thread identity has one FS base, each FS base one identity (ids unique per incarnation);
 * - hvprof's resident memory at the end within 10 % of what it was a third of the way in. */
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
#include "report/fxt_load.h"
#include "report/profile.h"
#include "symbolize/symbol_path.h"
#include "tests/common/need_kvm.h"

#define PROCS    3000
#define THREADS  3000
#define FS_BASE0 0x100000000000ull

static const char *frame_func(const struct profile *p, const struct prof_frame *f)
{
    if (f->loc == PROF_NONE || !p->locs.v[f->loc].resolved)
        return "";
    return p->funcs.v[p->locs.v[f->loc].func].name;
}

static const char *frame_module(const struct profile *p, const struct prof_frame *f)
{
    if (f->loc == PROF_NONE || !p->locs.v[f->loc].resolved)
        return "";
    uint32_t m = p->funcs.v[p->locs.v[f->loc].func].module;
    return m == PROF_NONE ? "" : profile_module_basename(p, m);
}

/* The program of a user sample: its leaf frame's module ("workload.elf"...), "" if unknown. */
static const char *user_program(const struct profile *p, const struct prof_sample *s)
{
    for (uint32_t k = 0; k < s->nframes; k++) {
        const char *m = frame_module(p, &p->frames.v[s->first + k]);
        if (strstr(m, ".elf") && strcmp(m, "hvprof-guest.elf"))
            return m;
    }
    return "";
}

struct per_pid {
    uint64_t pid;
    char prog[32];
    uint64_t samples, others; /* user samples of its program, of another program */
};

static struct per_pid *pid_entry(struct per_pid *v, size_t *n, size_t cap, uint64_t pid)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i].pid == pid)
            return &v[i];
    assert_true(*n < cap);
    v[*n] = (struct per_pid){.pid = pid};
    return &v[(*n)++];
}

static void test_churn(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char cmdline[256];
    snprintf(cmdline, sizeof(cmdline),
             "progs=churn,workload procs=1 seconds=10 churn_procs=%d churn_threads=%d "
             "churn_live=4 churn_us=1000",
             PROCS, THREADS);
    struct record_result *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    assert_int_equal(record_run(r, 0, 0, 0, "--vcpus", "2", "--hz", "1000", "--mem", "512M",
                                "--cmdline", cmdline, NULL),
                     0);
    assert_int_equal(r->status, 0);
    char want[96];
    snprintf(want, sizeof(want), "procs=%d threads=%d failed=0", PROCS, THREADS);
    assert_non_null(strstr(r->console, want));
    assert_non_null(strstr(r->console, "hvprof-guest: status 0"));
    /* The tables never filled, and identities went back. */
    assert_non_null(strstr(r->summary, "guest identities: 0 table-full lookups"));
    assert_null(strstr(r->summary, "stops under the identity"));
    assert_non_null(strstr(r->summary, "guest identities ended and given back"));
    /* None ended while it still ran (the workload is sampled all along). */
    assert_null(strstr(r->summary, "came back"));

    struct profile p;
    profile_init(&p);
    struct fxt_load_stats st = {0};
    struct hv_err err = {0};
    struct symbol_path sp;
    symbol_path_init(&sp);
    if (fxt_load_profile_file(r->out_path, &p, &st, NULL, NULL, &err) < 0 ||
        symbol_path_add_dir(&sp, guest_build_path("tests/guest/progs"), &err) < 0 ||
        symbol_path_add_dir(&sp, guest_build_path("tests/guest"), &err) < 0 ||
        profile_load_symbols(&p, &sp, NULL, &err) < 0 ||
        profile_symbolize(&p, NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    symbol_path_free(&sp);
    print_message("%zu samples; %" PRIu64 " processes and %" PRIu64 " threads ended\n", p.samples.n,
                  st.processes_ended, st.threads_ended);
    assert_true(st.processes_ended > PROCS / 2);
    assert_true(st.threads_ended > THREADS / 2);

    /* Per process: which program its user samples ran. */
    size_t cap = PROCS + 64, npids = 0;
    struct per_pid *pids = calloc(cap, sizeof(*pids));
    /* Per churn thread (FS base): the thread identities its samples went to. */
    uint64_t *fs_tid = calloc(THREADS, sizeof(*fs_tid));
    uint64_t user = 0, mixed = 0, child = 0, thread_work = 0, thread_wrong = 0, workload = 0;
    uint64_t workload_pid = 0, workload_elsewhere = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        if (s->cpl != 3 || !s->nframes)
            continue;
        const char *prog = user_program(&p, s);
        if (!*prog)
            continue;
        user++;
        struct per_pid *e = pid_entry(pids, &npids, cap, s->pid);
        if (!e->prog[0])
            snprintf(e->prog, sizeof(e->prog), "%s", prog);
        if (strcmp(e->prog, prog))
            e->others++;
        else
            e->samples++;
        if (!strcmp(prog, "workload.elf")) {
            workload++;
            if (!workload_pid)
                workload_pid = s->pid;
            workload_elsewhere += s->pid != workload_pid;
        }
        child += !strcmp(prog, "churn_child.elf");
        const char *leaf = frame_func(&p, &p.frames.v[s->first]);
        if (!strcmp(leaf, "thread_leaf") || !strcmp(leaf, "thread_work")) {
            thread_work++;
            /* Its thread identity's FS base, from the name the recorder gave it. */
            const char *name = profile_thread_name(&p, s->pid, s->tid);
            const char *fs = name ? strstr(name, "fs=0x") : NULL;
            unsigned long long v = fs ? strtoull(fs + 5, NULL, 16) : 0;
            if (v < FS_BASE0 || v >= FS_BASE0 + (uint64_t)THREADS * 4096 || (v & 4095)) {
                thread_wrong++;
                continue;
            }
            uint64_t *t = &fs_tid[(v - FS_BASE0) / 4096];
            if (*t && *t != s->tid)
                thread_wrong++; /* one FS base, two identities */
            *t = s->tid;
        }
    }
    uint64_t child_pids = 0;
    for (size_t i = 0; i < npids; i++) {
        mixed += pids[i].others;
        child_pids += !strcmp(pids[i].prog, "churn_child.elf");
    }
    print_message("%" PRIu64 " user samples in %zu processes: %" PRIu64
                  " of another program than their process's first; workload %" PRIu64 " (%" PRIu64
                  " outside its identity); children %" PRIu64 " in %" PRIu64
                  " processes; churn threads %" PRIu64 " (%" PRIu64 " under a wrong identity)\n",
                  user, npids, mixed, workload, workload_elsewhere, child, child_pids, thread_work,
                  thread_wrong);
    /* A child lives ~8 ms: the samples of those that end before the drain thread's look at
     * their address space (every 10 ms) have no module, and are not counted here. */
    assert_true(workload > 1000 && child > 100 && thread_work > 300);
    /* >= 99.9 % where the truth is known. */
    assert_true(mixed * 1000 <= user);
    assert_true(workload_elsewhere * 1000 <= workload);
    assert_true(thread_wrong * 1000 <= thread_work);
    assert_true(child_pids > child / 20); /* the children are many, not a few merged */

    /* A thread identity has one FS base: the names say so by construction; a name the
     * recorder gave two incarnations would need two FS bases for one koid (checked above by
     * FS base, one identity each). hvprof's memory follows what is alive, not what came. */
    assert_true(r->nrss >= 10);
    for (unsigned i = 0; i < r->nrss; i += r->nrss / 20 + 1)
        print_message("  RSS at %.1f s: %" PRIu64 " KiB\n", i * RECORD_RSS_EVERY_MS / 1000.0,
                      r->rss_kib[i]);
    uint64_t early = r->rss_kib[r->nrss / 3], end = r->rss_kib[r->nrss - 1];
    print_message("hvprof RSS: %" PRIu64 " KiB a third of the way in, %" PRIu64 " KiB at the end\n",
                  early, end);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's quarantine keeps freed memory resident by design: the bound is the plain build's. */
    print_message("ASan build: hvprof's memory bound not judged\n");
#else
    assert_true(end * 10 <= early * 11);
#endif
    free(fs_tid);
    free(pids);
    profile_free(&p);
    record_result_free(r);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
