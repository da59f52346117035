/* Containers in a report (docs/containers.md), from a recording written with the recorder's own
 * schema writers: two processes of one program in two podman containers, one of them moved to a
 * third container halfway, a host process in a plain service cgroup, namespace pids on the
 * containers' threads, and a kernel sample completed later (a continuation, joined). The
 * loader's groups and namespace ids, then what `hvprof report` makes of them: --sort container
 * and cgroup, the per-container table, --container and --cgroup (and their explanation when
 * they keep nothing), the folded stacks' container frames, perf-script -F +cgroup, and the
 * pprof labels as the protobuf runtime decodes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/writer.h"
#include "report/fxt_load.h"
#include "report/profile.h"
#include "schema/encode.h"
#include "schema/recording.h"
#include "testutil.h"

#define ID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define ID_C "aaaaaaaaaaaa5555555555555555555555555555555555555555555555555555"
#define CG_A "/machine.slice/libpod-" ID_A ".scope"
#define CG_B "/machine.slice/libpod-" ID_B ".scope"
#define CG_C "/machine.slice/libpod-" ID_C ".scope"
#define CG_H "/system.slice/ssh.service"

struct fix {
    char *dir;
    char rec[4200], hvprof[4096];
};

static void sample(struct fxt_writer *w, uint32_t proc, uint32_t thread, uint32_t group,
                   uint64_t ts, uint64_t pc, uint64_t caller, uint64_t cont, bool completion)
{
    uint64_t stack[2] = {pc, caller}, buf[64];
    struct hvfxt_sample s = {
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_PC | HVFXT_SF_USER_STACK,
        .pid = hvfxt_koid_guest_process(proc),
        .tid = hvfxt_koid_guest_thread(thread),
        .ts = ts,
        .cpl = 3,
        .pc = pc,
        .user_stack = stack,
        .n_user = 2,
    };
    if (group) {
        s.fields |= HVFXT_SF_CGROUP;
        s.cgroup = hvfxt_koid_group(group);
    }
    if (cont) { /* a kernel sample whose user stack comes later */
        s.fields = (s.fields & ~(uint32_t)HVFXT_SF_USER_STACK) | HVFXT_SF_CONTINUATION;
        s.cpl = 0;
        s.pc = 0xffffffff81000100ull;
        s.continuation = cont;
    }
    if (completion) {
        s = (struct hvfxt_sample){
            .fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_USER_STACK,
            .completion = cont,
            .user_stack = stack,
            .n_user = 2,
        };
    }
    size_t n = hvfxt_enc_sample(buf, 64, &s);
    assert_true(n > 0);
    assert_int_equal(fxt_writer_emit(w, hvfxt_vcpu_provider(0), buf, n, NULL), 0);
}

static int setup(void **state)
{
    const char *bin = getenv("HVPROF_BINARY_DIR");
    if (!bin)
        return -1;
    struct fix *f = calloc(1, sizeof(*f));
    f->dir = make_temp_dir();
    snprintf(f->rec, sizeof(f->rec), "%s/rec.fxt", f->dir);
    snprintf(f->hvprof, sizeof(f->hvprof), "%s/cli/hvprof", bin);
    struct fxt_writer w;
    struct hv_err err = {0};
    if (hvfxt_recording_open(&w, f->rec, 1000000000ull, 1, "containers", &err) < 0)
        return -1;
    struct hvfxt_thread_ns in_a = {1, 1, 4026532111ull, 4026532110ull, "0123456789ab"},
                           in_b = {7, 7, 4026532222ull, 0, NULL};
    assert_int_equal(hvfxt_write_guest_process(&w, 1, "worker", 101, &err), 0);
    assert_int_equal(hvfxt_write_guest_thread(&w, 1, 1, "worker", 101, &in_a, &err), 0);
    assert_int_equal(hvfxt_write_guest_process(&w, 2, "worker", 202, &err), 0);
    assert_int_equal(hvfxt_write_guest_thread(&w, 2, 2, "worker", 202, &in_b, &err), 0);
    assert_int_equal(hvfxt_write_guest_process(&w, 3, "sshd", 303, &err), 0);
    assert_int_equal(hvfxt_write_guest_thread(&w, 3, 3, "sshd", 303, NULL, &err), 0);
    assert_int_equal(hvfxt_write_group(&w, 1, CG_A, &err), 0);
    assert_int_equal(hvfxt_write_group(&w, 2, CG_B, &err), 0);
    assert_int_equal(hvfxt_write_group(&w, 3, CG_H, &err), 0);
    uint64_t ts = 1000;
    for (int i = 0; i < 30; i++) /* worker 101 in A, then (below) moved to C */
        sample(&w, 1, 1, 1, ts += 1000, 0x401000, 0x402000, 0, false);
    for (int i = 0; i < 20; i++)
        sample(&w, 2, 2, 2, ts += 1000, 0x401000, 0x402000, 0, false);
    for (int i = 0; i < 10; i++)
        sample(&w, 3, 3, 3, ts += 1000, 0x501000, 0x502000, 0, false);
    assert_int_equal(hvfxt_write_group(&w, 4, CG_C, &err), 0);
    for (int i = 0; i < 10; i++)
        sample(&w, 1, 1, 4, ts += 1000, 0x401000, 0x402000, 0, false);
    /* In the kernel in C, its user stack completed later: the join keeps its group. */
    sample(&w, 1, 1, 4, ts += 1000, 0, 0, 77, false);
    sample(&w, 1, 1, 0, ts += 1000, 0x401000, 0x402000, 77, true);
    assert_int_equal(fxt_writer_close(&w, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fix *f = *state;
    remove_temp_dir(f->dir);
    free(f);
    return 0;
}

/* `want` in `out`, or the test fails with what it got. */
#define assert_has(out, want)                                                                      \
    do {                                                                                           \
        if (!(out) || !strstr((out), (want)))                                                      \
            fail_msg("wanted \"%s\" in:\n%s", (want), (out) ? (out) : "(nothing)");                \
    } while (0)

static void test_loaded(void **state)
{
    struct fix *f = *state;
    struct profile p;
    profile_init(&p);
    struct fxt_load_stats st;
    struct hv_err err = {0};
    assert_int_equal(fxt_load_profile_file(f->rec, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(p.groups.n, 4);
    assert_int_equal(p.samples.n, 71);
    unsigned in[5] = {0};
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_group *g = profile_sample_group(&p, &p.samples.v[i]);
        assert_non_null(g);
        in[(g - p.groups.v) + 1]++;
    }
    assert_int_equal(in[1], 30);
    assert_int_equal(in[2], 20);
    assert_int_equal(in[3], 10);
    assert_int_equal(in[4], 11); /* the joined kernel sample too */
    assert_string_equal(p.groups.v[0].ct.id, ID_A);
    assert_int_equal(p.groups.v[0].ct.engine, CT_PODMAN);
    assert_int_equal(p.groups.v[2].ct.engine, CT_NONE);
    const struct prof_name *t =
        profile_name_of(&p, hvfxt_koid_guest_process(2), hvfxt_koid_guest_thread(2));
    const struct prof_name *pr = profile_name_of(&p, hvfxt_koid_guest_process(2), 0);
    assert_non_null(t);
    assert_non_null(pr);
    assert_int_equal(t->ns_id, 7);
    assert_int_equal(pr->ns_id, 7);
    assert_int_equal(t->pid_ns, 4026532222ull);
    assert_null(t->hostname);
    const struct prof_name *ta =
        profile_name_of(&p, hvfxt_koid_guest_process(1), hvfxt_koid_guest_thread(1));
    assert_string_equal(ta->hostname, "0123456789ab");
    const struct prof_name *host = profile_name_of(&p, hvfxt_koid_guest_process(3), 0);
    assert_int_equal(host->ns_id, -1);
    profile_free(&p);
}

static void test_sort_and_table(void **state)
{
    struct fix *f = *state;
    int st;
    char *out = run_capturef(&st, "'%s' report '%s' -q --sort container", f->hvprof, f->rec);
    assert_int_equal(st, 0);
    assert_has(out, "Container");
    assert_has(out, "0123456789ab");
    assert_has(out, "fedcba987654");
    assert_has(out, "aaaaaaaaaaaa");
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q --sort cgroup", f->hvprof, f->rec);
    assert_has(out, CG_H);
    assert_has(out, CG_B);
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q", f->hvprof, f->rec);
    assert_int_equal(st, 0);
    const char *table = strstr(out, "# Per container");
    assert_non_null(table);
    /* 30 of 71 in A, 20 in B, 11 in C, the host's 10 in none. */
    assert_has(table, "42.25%         30    0.00%  0123456789ab   podman           worker");
    assert_has(table, "28.17%         20    0.00%  fedcba987654   podman           worker");
    assert_has(table, "15.49%         11    9.09%  aaaaaaaaaaaa   podman           worker");
    assert_has(table, "14.08%         10    0.00%  -              (none)           sshd");
    free(out);
}

static unsigned samples_of(const char *out)
{
    unsigned n = 0;
    const char *at = out ? strstr(out, "# hvprof report: ") : NULL;
    return at && sscanf(at, "# hvprof report: %u sample", &n) == 1 ? n : 0;
}

static void test_filters(void **state)
{
    struct fix *f = *state;
    int st;
    char *out = run_capturef(&st, "'%s' report '%s' -q --container 0123", f->hvprof, f->rec);
    assert_int_equal(samples_of(out), 30);
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q --container 0123,fedcba987654", f->hvprof, f->rec);
    assert_int_equal(samples_of(out), 50);
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q --cgroup '/machine.slice/*'", f->hvprof, f->rec);
    assert_int_equal(samples_of(out), 61);
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q --cgroup " CG_H " --comm sshd", f->hvprof, f->rec);
    assert_int_equal(samples_of(out), 10);
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q --container 99 2>&1", f->hvprof, f->rec);
    assert_has(out, "--container 99: no sample of such a container; the "
                    "recording's containers: 0123456789ab");
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q --cgroup /kubepods 2>&1", f->hvprof, f->rec);
    assert_has(out, "--cgroup /kubepods: no sample in such a cgroup; the "
                    "recording's cgroups: " CG_A);
    free(out);
}

static void test_formats(void **state)
{
    struct fix *f = *state;
    int st;
    char *out = run_capturef(&st, "'%s' report '%s' -q --format folded 2>&1", f->hvprof, f->rec);
    if (st != 0)
        fail_msg("%s", out);
    assert_has(out, "[podman 0123456789ab];worker;");
    assert_has(out, "[podman fedcba987654];worker;");
    assert_has(out, "\nsshd;"); /* the host's: no container frame */
    free(out);
    out =
        run_capturef(&st, "'%s' report '%s' -q --format perf-script -F +cgroup", f->hvprof, f->rec);
    assert_int_equal(st, 0);
    assert_has(out, "cpu-clock: " CG_B " \n");
    assert_has(out, "cpu-clock: " CG_H " \n");
    free(out);
    /* The timeline's process tracks: a container's processes named after it first. */
    out = run_capturef(&st,
                       "'%s' report '%s' -q --format timeline -o '%s/t.fxt' && grep -a -o "
                       "'\\[podman [0-9a-f]*\\] worker [0-9]*' '%s/t.fxt' | sort",
                       f->hvprof, f->rec, f->dir, f->dir);
    assert_int_equal(st, 0);
    assert_has(out, "[podman 0123456789ab] worker 101");
    assert_has(out, "[podman fedcba987654] worker 202");
    free(out);
    out = run_capturef(&st, "'%s' report '%s' -q --format perf-script -F +nope 2>&1", f->hvprof,
                       f->rec);
    assert_int_equal(st, 2);
    assert_has(out, "'+nope' is not one hvprof adds");
    free(out);
    out = run_capturef(&st,
                       "'%s' report '%s' -q --format pprof -o '%s/p.pb.gz' && "
                       "/usr/bin/python3 '%s' '%s/p.pb.gz' '%s' '%s'",
                       f->hvprof, f->rec, f->dir, CHECK_PPROF, f->dir, PROFILE_PROTO_DIR, f->dir);
    assert_int_equal(st, 0);
    assert_has(out, "\"labels\": [\"cgroup\", \"container_id\", \"cpl\", \"hostname\", "
                    "\"ns_pid\", \"ns_tid\", \"pid\", \"process\", \"thread\", \"tid\", "
                    "\"vcpu\"]");
    assert_has(out, "[\"ns_pid\", \"id\"]");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loaded),
        cmocka_unit_test(test_sort_and_table),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_formats),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
