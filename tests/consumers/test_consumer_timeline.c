/* The demo guest's timeline (tests/consumers/record.sh) nested the way Perfetto's FXT importer
 * nests it (docs/report.md): each track's begin and end events sorted by time with ties in file
 * order, a begin opening a slice inside the open one, an end closing the innermost. On that
 * replay every end closes the slice it names, every slice is closed at the end, each vCPU
 * track's top row holds guest processes (slices with the guest pid argument), and every stack
 * lies in its callers: hot_leaf inside alpha inside main inside _start inside its process, as
 * the demo's workload calls it. Each vCPU has its steal counter, a share in percent.
 * usage: test_consumer_timeline REPORT_DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/reader.h"
#include "schema/schema.h"

static const char *report_dir;

struct ev {
    uint64_t ts, seq, track;
    bool begin, pid_arg;
    char name[96];
};

static int by_time_then_file(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

enum { MAX_TRACKS = 256, MAX_DEPTH = 256 };

static void test_perfetto_nesting(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s/timeline.fxt", report_dir);
    const void *buf;
    size_t len;
    struct hv_err err = {0};
    if (fxtr_map_file(path, &buf, &len, &err) < 0)
        fail_msg("%s", err.msg);
    struct fxtr_reader r;
    fxtr_init(&r, buf, len);
    struct fxtr_record rec;
    size_t n = 0, cap = 1 << 16;
    struct ev *ev = malloc(cap * sizeof(*ev));
    int rc;
    unsigned steal[2] = {0, 0};
    while (ev && (rc = fxtr_next(&r, &rec, &err)) == 1) {
        if (rec.type != FXTR_EVENT)
            continue;
        if (rec.u.event.etype == 1) {
            /* A vCPU's steal counter: Perfetto's importer makes "vcpu N steal:percent" of it. */
            unsigned v;
            char name[32];
            snprintf(name, sizeof(name), "%.*s", (int)rec.u.event.name.len, rec.u.event.name.ptr);
            if (sscanf(name, "vcpu %u steal", &v) != 1 || v > 1)
                fail_msg("a counter \"%s\" that is no vCPU's steal", name);
            assert_int_equal(rec.u.event.pid, HVFXT_KOID_VM);
            assert_int_equal(rec.u.event.tid, hvfxt_koid_vcpu(v));
            assert_int_equal(rec.u.event.nargs, 1);
            assert_true(fxtr_str_is(rec.u.event.args[0].name, "percent"));
            assert_int_equal(rec.u.event.args[0].type, FXTR_ARG_DOUBLE);
            assert_true(rec.u.event.args[0].v.d >= 0 && rec.u.event.args[0].v.d <= 100);
            steal[v]++;
            continue;
        }
        assert_true(rec.u.event.etype == 2 || rec.u.event.etype == 3); /* begin, end */
        if (n == cap) {
            struct ev *g = realloc(ev, (cap *= 2) * sizeof(*ev));
            assert_non_null(g);
            ev = g;
        }
        ev[n] = (struct ev){.ts = rec.u.event.ts,
                            .seq = n,
                            .track = rec.u.event.pid * 1000003ull + rec.u.event.tid,
                            .begin = rec.u.event.etype == 2,
                            .pid_arg = rec.u.event.nargs > 0};
        /* vCPU tracks are threads of the VM process (docs/report.md, timeline). */
        if (rec.u.event.pid != HVFXT_KOID_VM)
            ev[n].track |= 1ull << 63;
        snprintf(ev[n].name, sizeof(ev[n].name), "%.*s", (int)rec.u.event.name.len,
                 rec.u.event.name.ptr);
        n++;
    }
    assert_non_null(ev);
    if (rc < 0)
        fail_msg("%s: %s", path, err.msg);
    fxtr_free(&r);
    assert_true(n > 1000);
    qsort(ev, n, sizeof(*ev), by_time_then_file);

    static const char *chain[] = {"hot_leaf", "alpha", "main", "_start"};
    uint64_t keys[MAX_TRACKS] = {0};
    static struct ev *open[MAX_TRACKS][MAX_DEPTH];
    unsigned depth[MAX_TRACKS] = {0}, tracks = 0, vcpu_tracks = 0;
    uint64_t hot_on_vcpus = 0, top_rows = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned t = 0;
        while (t < tracks && keys[t] != ev[i].track)
            t++;
        if (t == tracks) {
            assert_true(tracks < MAX_TRACKS);
            keys[tracks++] = ev[i].track;
            vcpu_tracks += !(ev[i].track >> 63);
        }
        bool vcpu = !(ev[i].track >> 63);
        if (ev[i].begin) {
            assert_true(depth[t] < MAX_DEPTH);
            if (vcpu && depth[t] == 0) {
                /* The top row: a guest process, never a function. */
                if (!ev[i].pid_arg)
                    fail_msg("vCPU track's top row has \"%s\" at %llu, not a process", ev[i].name,
                             (unsigned long long)ev[i].ts);
                top_rows++;
            }
            open[t][depth[t]++] = &ev[i];
            if (vcpu && !strcmp(ev[i].name, "hot_leaf")) {
                /* Its callers are the slices it opened in, innermost first. */
                assert_true(depth[t] >= 5);
                for (unsigned k = 1; k < 4; k++)
                    if (strcmp(open[t][depth[t] - 1 - k]->name, chain[k]))
                        fail_msg("hot_leaf at %llu nests in \"%s\" where \"%s\" called it",
                                 (unsigned long long)ev[i].ts, open[t][depth[t] - 1 - k]->name,
                                 chain[k]);
                assert_true(open[t][depth[t] - 5]->pid_arg); /* the process above _start */
                hot_on_vcpus++;
            }
            continue;
        }
        if (depth[t] == 0)
            fail_msg("an end of \"%s\" at %llu with no slice open", ev[i].name,
                     (unsigned long long)ev[i].ts);
        struct ev *b = open[t][--depth[t]];
        if (strcmp(b->name, ev[i].name))
            fail_msg("the end of \"%s\" at %llu closes \"%s\" (begun at %llu)", ev[i].name,
                     (unsigned long long)ev[i].ts, b->name, (unsigned long long)b->ts);
        assert_true(ev[i].ts >= b->ts);
    }
    for (unsigned t = 0; t < tracks; t++)
        assert_int_equal(depth[t], 0);
    printf("%zu events on %u tracks (%u vCPUs): %llu process slices on the vCPUs' top rows, "
           "%llu hot_leaf slices nested in alpha, main, _start and their process\n",
           n, tracks, vcpu_tracks, (unsigned long long)top_rows, (unsigned long long)hot_on_vcpus);
    assert_int_equal(vcpu_tracks, 2);
    assert_true(hot_on_vcpus > 0 && top_rows > 0);
    /* Each vCPU's steal over the recording: a counter every 0.1 s at most while it ran (the drain
     * thread's passes; a few seconds here). */
    printf("steal counters: vcpu0 %u, vcpu1 %u\n", steal[0], steal[1]);
    assert_true(steal[0] >= 5 && steal[1] >= 5);
    free(ev);
    fxtr_unmap_file(buf, len);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s REPORT_DIR\n", argv[0]);
        return 2;
    }
    report_dir = argv[1];
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_perfetto_nesting)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
