/* Each report writer on a synthetic profile, checked with independent tools: folded counts sum
 * to the samples; pprof decodes with the real protobuf runtime and holds the functions and
 * build-id; the SVG parses as XML and names the hot function; perf-script has one block per
 * sample; the timeline FXT passes the strict reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/reader.h"
#include "schema/decode.h"
#include "report/report.h"
#include "synth.h"
#include "testutil.h"

struct ctx {
    struct profile p;
    size_t n;
    char *dir;
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    c->n = synth_profile(&c->p);
    c->dir = make_temp_dir();
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    profile_free(&c->p);
    remove_temp_dir(c->dir);
    free(c);
    return 0;
}

static char *write_format(struct ctx *c, enum report_format f)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s", c->dir, report_format_filename(f));
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    struct hv_err err;
    struct report_opts o = {.title = "test profile"};
    if (report_write(f, &c->p, &o, out, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(fclose(out), 0);
    return path;
}

static void test_folded(void **state)
{
    struct ctx *c = *state;
    size_t len;
    char *text = read_file(write_format(c, REPORT_FOLDED), &len);
    text = realloc(text, len + 1);
    text[len] = 0;
    unsigned long long sum = 0;
    int lines = 0, saw_hot = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *sp = strrchr(line, ' ');
        assert_non_null(sp);
        sum += strtoull(sp + 1, NULL, 10);
        lines++;
        *sp = 0;
        if (!strcmp(line,
                    "prog_static;_start;fixture_main;fixture_outer;fixture_middle;fixture_leaf"))
            saw_hot = 1;
    }
    assert_int_equal(sum, c->n);
    assert_true(saw_hot);
    assert_int_equal(lines, 5); /* five distinct stacks */
    free(text);
}

static void test_pprof(void **state)
{
    struct ctx *c = *state;
    const char *path = write_format(c, REPORT_PPROF);
    char cmd[8192];
    /* An independent decoder first: protoc's raw decoding must accept the bytes. */
    snprintf(cmd, sizeof(cmd), "gzip -dc '%s' | protoc --decode_raw > /dev/null", path);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s' '%s' '%s' '%s'", CHECK_PPROF, path,
             PROFILE_PROTO_DIR, c->dir);
    int status;
    char *out = run_capture(cmd, &status);
    assert_non_null(out);
    if (status != 0)
        fail_msg("check_pprof failed: %s", out);
    char want[256];
    snprintf(want, sizeof(want), "\"samples\": %zu", c->n);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "\"fixture_leaf\": 60"));
    assert_non_null(strstr(out, "\"fixture_outer\""));
    assert_non_null(strstr(out, "\"do_syscall_64\""));
    assert_non_null(strstr(out, "\"prog_static+0x40f000\""));
    assert_non_null(strstr(out, "\"0x7fff12340000\""));
    char hex[41], id_json[80];
    readelf_build_id(fixture("prog_static"), hex, sizeof(hex));
    snprintf(id_json, sizeof(id_json), "[\"prog_static\", \"%s\"]", hex);
    assert_non_null(strstr(out, id_json));
    assert_non_null(
        strstr(out, "\"labels\": [\"cpl\", \"pid\", \"process\", \"thread\", \"tid\", \"vcpu\"]"));
    assert_non_null(strstr(out, "\"dropped_by_pprof\": []"));
    assert_non_null(strstr(out, "[\"fixture_leaf\", \"prog_static\"]")); /* its binary */
    assert_non_null(strstr(out, "\"cpls\": [0, 3]"));
    assert_non_null(strstr(out, "\"vcpus\": [0"));
    assert_non_null(strstr(out, "\"label_units\": [[\"cpl\", \"ring\"], [\"pid\", \"id\"], "
                                "[\"tid\", \"id\"], [\"vcpu\", \"index\"]]"));
    assert_non_null(strstr(out, "[\"cpu\", \"nanoseconds\"]"));
    assert_non_null(strstr(out, "\"period\": 1000000"));
    free(out);
}

static void test_svg(void **state)
{
    struct ctx *c = *state;
    const char *path = write_format(c, REPORT_SVG);
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; "
             "r = E.parse(sys.argv[1]).getroot(); ns = '{http://www.w3.org/2000/svg}'; "
             "assert r.tag == ns + 'svg', r.tag; "
             "t = [x.text for x in r.iter(ns + 'title')]; "
             "hot = [x for x in t if x.startswith('fixture_leaf ')]; "
             "assert hot and '60 samples' in hot[0], t; "
             "assert r.find(ns + 'script') is not None; print('ok')\" '%s'",
             path);
    int status;
    char *out = run_capture(cmd, &status);
    assert_int_equal(status, 0);
    assert_string_equal(out, "ok\n");
    free(out);
    /* The script itself, run on the SVG's frames as a browser would after a user's clicks
     * (check_svg.js: a minimal DOM in node): fixture_leaf holds 60 samples, all under
     * fixture_middle, so searching it reads 60/n of the whole, and 60/w of fixture_middle's w
     * samples once zoomed there (flamegraph.pl's rule); the case toggle finds it spelled in
     * capitals. */
    snprintf(cmd, sizeof(cmd), "node '%s' '%s'", CHECK_SVG, path);
    out = run_capture(cmd, &status);
    assert_non_null(out);
    if (status != 0)
        fail_msg("check_svg.js: %s", out);
    char want[160];
    snprintf(want, sizeof(want), "\"whole\":\"Matched: %.2f%%\"", 100.0 * 60 / (double)c->n);
    if (!strstr(out, want))
        fail_msg("want %s in %s", want, out);
    const char *zw = strstr(out, "\"zoom_w\":");
    unsigned zoom_w = zw ? (unsigned)atoi(zw + 9) : 0;
    if (zoom_w < 60 || zoom_w >= c->n)
        fail_msg("fixture_middle holds %u samples: %s", zoom_w, out);
    char zoomed[80];
    snprintf(zoomed, sizeof(zoomed), "\"zoomed\":\"Matched: %.2f%%\"", 100.0 * 60 / zoom_w);
    const char *expect[] = {zoomed, want + strlen("\"whole\":"), /* again after Reset Zoom */
                            "\"upper\":\"Matched: 0.00%\"", "\"ic_label\":\"IC\""};
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
        if (!strstr(out, expect[i]))
            fail_msg("want %s in %s", expect[i], out);
    snprintf(want, sizeof(want), "\"upper_ic\":\"Matched: %.2f%%\"", 100.0 * 60 / (double)c->n);
    if (!strstr(out, want))
        fail_msg("want %s in %s", want, out);
    free(out);
    /* Self-contained: nothing is fetched from elsewhere. */
    size_t len;
    char *svg = read_file(path, &len);
    svg = realloc(svg, len + 1);
    svg[len] = 0;
    assert_null(strstr(svg, "href="));
    assert_null(strstr(svg, "http://www.w3.org/1999/xlink"));
    /* Guest-kernel frames carry FlameGraph's "_[k]" (its colours apart), user frames not; no
     * frame of this small profile is narrower than 0.1 px, so none is left out. */
    assert_non_null(strstr(svg, "data-n=\"do_syscall_64_[k]\""));
    assert_null(strstr(svg, "data-n=\"fixture_leaf_[k]\""));
    assert_null(strstr(svg, "id=\"minwidth\""));
    free(svg);
}

static void test_perf_script(void **state)
{
    struct ctx *c = *state;
    size_t len;
    char *text = read_file(write_format(c, REPORT_PERF_SCRIPT), &len);
    text = realloc(text, len + 1);
    text[len] = 0;
    /* Checked before the line loop below cuts the text into lines. */
    assert_non_null(strstr(text, " fixture_leaf+0x2 (prog_static)\n"));
    assert_non_null(strstr(text, "worker-1     1/1     [001]")); /* koids less their bases */
    size_t blocks = 0, frames = 0;
    int in_block = 0;
    unsigned long long last_us = 0;
    for (char *s = text; *s;) {
        char *nl = strchr(s, '\n');
        assert_non_null(nl);
        *nl = 0;
        if (!*s) {
            assert_true(in_block); /* one blank line ends each block */
            in_block = 0;
        } else if (!in_block) {
            /* "comm pid/tid [cpu] sec.usec: period event:" */
            char comm[64], ev[64];
            unsigned long long pid, tid, sec, usec, period;
            unsigned cpu;
            assert_int_equal(sscanf(s, "%63s %llu/%llu [%u] %llu.%llu: %llu %63[^:]:", comm, &pid,
                                    &tid, &cpu, &sec, &usec, &period, ev),
                             8);
            assert_string_equal(ev, "cpu-clock");
            assert_int_equal(period, 1000000);
            /* perf's layout: the line starts with the comm (importers need a non-space), and
             * samples come in time order (speedscope rejects a step back). */
            assert_true(s[0] != ' ' && s[0] != '\t');
            unsigned long long t = sec * 1000000ull + usec;
            assert_true(t >= last_us);
            last_us = t;
            blocks++;
            in_block = 1;
        } else {
            unsigned long long addr;
            char sym[512], dso[512];
            assert_int_equal(s[0], '\t');
            assert_int_equal(sscanf(s, "\t%llx %511s (%511[^)])", &addr, sym, dso), 3);
            frames++;
        }
        s = nl + 1;
    }
    assert_false(in_block);
    assert_int_equal(blocks, c->n);
    assert_int_equal(frames, 60 * 5 + 25 * 4 + 5 * 2 + 4 + 6 * 2);
    free(text);
}

static void test_top(void **state)
{
    struct ctx *c = *state;
    size_t len;
    char *text = read_file(write_format(c, REPORT_TOP), &len);
    text = realloc(text, len + 1);
    text[len] = 0;
    /* fixture_middle is on 85 of 100 stacks, leaf of 25; fixture_leaf is leaf of 60. */
    assert_non_null(strstr(text, "# hvprof report: 100 samples, 3 processes, 2 vCPUs"));
    assert_non_null(
        strstr(text, "85.00%   25.00%         25  prog_static              [.] fixture_middle"));
    assert_non_null(
        strstr(text, "60.00%   60.00%         60  prog_static              [.] fixture_leaf"));
    assert_non_null(strstr(text, "[k] do_syscall_64"));
    assert_non_null(strstr(text, "prog_static\n"));
    assert_non_null(strstr(text, "# Per vCPU"));
    free(text);
}

/* One row per guest process, keyed by pid and name as perf keys them: the recording's three
 * processes for guest pid 812 (its shell before execve, the program, and the program past
 * exit_mm() without an address space) make two rows, sh and work. */
static void test_top_process_rows(void **state)
{
    (void)state;
    struct profile p;
    profile_init(&p);
    struct {
        uint64_t koid;
        const char *name;
        int64_t guest;
        unsigned samples;
    } procs[] = {{0x10000005, "sh", 812, 3},
                 {0x10000007, "work", 812, 5},
                 {0x10000009, "work", 812, 2},
                 {0x1000000b, "work", 900, 1}};
    uint64_t ts = 0;
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
        assert_int_equal(
            profile_set_name(&p, procs[i].koid, 0, procs[i].name, procs[i].guest, NULL), 0);
        uint64_t a[] = {0xffffffff81000000ull + i};
        for (unsigned k = 0; k < procs[i].samples; k++)
            assert_true(profile_add_sample(&p,
                                           &(struct prof_sample_in){.ts = ts++,
                                                                    .vcpu = 0,
                                                                    .pid = procs[i].koid,
                                                                    .tid = procs[i].koid + 1,
                                                                    .cpl = 0,
                                                                    .addrs = a,
                                                                    .n = 1,
                                                                    .weight = 1},
                                           NULL) >= 0);
    }
    p.guest_ids = true;
    assert_int_equal(profile_link_processes(&p, NULL), 0);
    assert_int_equal(profile_symbolize(&p, NULL, NULL, NULL), 0);
    assert_int_equal(profile_process_row(&p, 0x10000009), 0x10000007);
    assert_int_equal(profile_process_row(&p, 0x10000005), 0x10000005);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct report_opts o = {.title = "rows"};
    assert_int_equal(report_write_top(&p, &o, out, NULL), 0);
    fclose(out);
    assert_non_null(strstr(buf, "# hvprof report: 11 samples, 3 processes"));
    assert_non_null(strstr(buf, "63.64%          7  100.00%  812          work\n"));
    assert_non_null(strstr(buf, "27.27%          3  100.00%  812          sh\n"));
    assert_non_null(strstr(buf, "9.09%          1  100.00%  900          work\n"));
    free(buf);
    profile_free(&p);
}

/* A timeline event as Perfetto's importer orders them. */
struct tl_ev {
    uint64_t ts, seq, pid, tid;
    bool begin, has_pid_arg;
    char name[64];
};

static int cmp_tl_ev(const void *a, const void *b)
{
    const struct tl_ev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_timeline(void **state)
{
    struct ctx *c = *state;
    const void *buf;
    size_t len;
    assert_int_equal(fxtr_map_file(write_format(c, REPORT_TIMELINE), &buf, &len, NULL), 0);
    struct hvfxt_stats st;
    struct hv_err err;
    if (hvfxt_stats(buf, len, &st, &err) < 0)
        fail_msg("%s", err.msg);
    assert_true(st.by_type[FXTR_EVENT] > 0);
    assert_true(st.by_type[FXTR_KOBJ] >= 1 + 2 + 3);
    /* Nesting as Perfetto's importer does it: a track's events sorted by time, ties in file
     * order; a begin opens a slice under the open one, an end closes the innermost. The hot
     * stack runs 60 consecutive samples on alternating vCPUs, so each vCPU has slices for
     * process + 5 frames that last across several samples. */
    struct fxtr_reader r;
    fxtr_init(&r, buf, len);
    struct fxtr_record rec;
    static struct tl_ev ev[1 << 16];
    size_t nev = 0;
    int rc;
    while ((rc = fxtr_next(&r, &rec, &err)) == 1) {
        if (rec.type != FXTR_EVENT)
            continue;
        assert_true(rec.u.event.etype == 2 || rec.u.event.etype == 3); /* begin, end */
        assert_true(nev < sizeof(ev) / sizeof(ev[0]));
        ev[nev] = (struct tl_ev){.ts = rec.u.event.ts,
                                 .seq = nev,
                                 .pid = rec.u.event.pid,
                                 .tid = rec.u.event.tid,
                                 .begin = rec.u.event.etype == 2,
                                 .has_pid_arg = rec.u.event.nargs == 1};
        snprintf(ev[nev].name, sizeof(ev[nev].name), "%.*s", (int)rec.u.event.name.len,
                 rec.u.event.name.ptr);
        nev++;
    }
    assert_int_equal(rc, 0);
    qsort(ev, nev, sizeof(ev[0]), cmp_tl_ev);
    int leaf_slices = 0, thread_leaf_slices = 0;
    uint64_t longest = 0, thread_longest = 0;
    static struct tl_ev *open[64][128]; /* per track (hashed below), the open slices */
    unsigned depth[64] = {0};
    uint64_t track_key[64] = {0};
    for (size_t i = 0; i < nev; i++) {
        uint64_t key = ev[i].pid * 1000003ull + ev[i].tid;
        unsigned t = 0;
        while (t < 64 && track_key[t] && track_key[t] != key)
            t++;
        assert_true(t < 64);
        track_key[t] = key;
        bool vcpu = ev[i].pid == HVFXT_KOID_VM;
        if (ev[i].begin) {
            assert_true(depth[t] < 128);
            /* A vCPU track's outermost slice is its guest process, marked with its pid. */
            assert_int_equal(ev[i].has_pid_arg, vcpu && depth[t] == 0);
            if (!strcmp(ev[i].name, "fixture_leaf"))
                assert_true(depth[t] >= (vcpu ? 2u : 1u)); /* never on top */
            open[t][depth[t]++] = &ev[i];
            continue;
        }
        assert_true(depth[t] > 0);
        struct tl_ev *b = open[t][--depth[t]];
        assert_string_equal(b->name, ev[i].name); /* the innermost slice closes first */
        assert_true(ev[i].ts >= b->ts);
        if (strcmp(b->name, "fixture_leaf"))
            continue;
        uint64_t d = ev[i].ts - b->ts;
        if (b->pid == SYNTH_PID && b->tid == SYNTH_TID) {
            thread_leaf_slices++; /* the guest thread's own track */
            thread_longest = d > thread_longest ? d : thread_longest;
        } else {
            assert_int_equal(b->pid, HVFXT_KOID_VM); /* a vCPU's track */
            leaf_slices++;
            longest = d > longest ? d : longest;
        }
    }
    for (unsigned t = 0; t < 64; t++)
        assert_int_equal(depth[t], 0); /* every slice ended */
    assert_true(leaf_slices >= 1 && leaf_slices <= 4);
    assert_true(longest >= 10 * 1000000ull); /* merged across many 1 ms samples */
    /* On the thread's track the 60 hot samples are consecutive, whichever vCPU took them. */
    assert_int_equal(thread_leaf_slices, 1);
    assert_true(thread_longest >= 59 * 1000000ull);
    fxtr_free(&r);
    fxtr_unmap_file(buf, len);
}

/* Exit events on the timeline last their host time and are never merged; steal markers become
 * a counter per vCPU, the share of each interval stolen, as Perfetto's importer reads counters
 * (a process counter track per event name and argument). */
static void test_timeline_exits_and_steal(void **state)
{
    (void)state;
    struct profile p;
    struct hv_err err;
    profile_init(&p);
    p.ticks_per_sec = 1000000000ull;
    p.exits = true;
    const uint64_t pc[2] = {0xffffffff81000010ull, 0xffffffffffe00000ull};
    assert_int_equal(profile_add_sample(&p,
                                        &(struct prof_sample_in){.ts = 1000000,
                                                                 .vcpu = 0,
                                                                 .pid = 0x10000001,
                                                                 .tid = 0x40000001,
                                                                 .cpl = 0,
                                                                 .addrs = pc,
                                                                 .n = 2,
                                                                 .weight = 1},
                                        &err),
                     0);
    assert_int_equal(profile_add_sample(&p,
                                        &(struct prof_sample_in){.ts = 1001000,
                                                                 .vcpu = 0,
                                                                 .pid = 0x10000001,
                                                                 .tid = 0x40000001,
                                                                 .cpl = 0,
                                                                 .addrs = pc,
                                                                 .n = 2,
                                                                 .weight = 1},
                                        &err),
                     1);
    p.samples.v[0].exit_ns = 1500; /* past the next exit's time: cut there */
    p.samples.v[1].exit_ns = 10;
    const struct prof_steal steal[] = {{0, 0, 0},
                                       {50000000, 0, 1},
                                       {100000000, 25000000, 0},
                                       {150000000, 50000000, 1},
                                       {200000000, 25000000, 0}};
    for (size_t i = 0; i < sizeof(steal) / sizeof(steal[0]); i++)
        assert_true(vec_append(&p.steal, steal[i]));
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct report_opts o = {.title = "exits"};
    assert_int_equal(report_write(REPORT_TIMELINE, &p, &o, out, &err), 0);
    assert_int_equal(fclose(out), 0);

    struct fxtr_reader r;
    fxtr_init(&r, buf, len);
    struct fxtr_record rec;
    const struct {
        const char *name;
        uint64_t ts;
        double pct;
    } want[] = {{"vcpu 0 steal", 0, 25.0},
                {"vcpu 0 steal", 100000000, 0.0},
                {"vcpu 0 steal", 200000000, 0.0},
                {"vcpu 1 steal", 50000000, 50.0},
                {"vcpu 1 steal", 150000000, 0.0}};
    unsigned counters = 0, begins = 0;
    uint64_t ends[8];
    unsigned nends = 0;
    int rc;
    while ((rc = fxtr_next(&r, &rec, &err)) == 1) {
        if (rec.type != FXTR_EVENT)
            continue;
        if (rec.u.event.etype == 1) {
            assert_true(counters < 5);
            assert_true(fxtr_str_is(rec.u.event.name, want[counters].name));
            assert_int_equal(rec.u.event.ts, want[counters].ts);
            assert_int_equal(rec.u.event.pid, HVFXT_KOID_VM);
            assert_int_equal(rec.u.event.nargs, 1);
            assert_true(fxtr_str_is(rec.u.event.args[0].name, "percent"));
            assert_int_equal(rec.u.event.args[0].type, FXTR_ARG_DOUBLE);
            assert_true(rec.u.event.args[0].v.d > want[counters].pct - 1e-9 &&
                        rec.u.event.args[0].v.d < want[counters].pct + 1e-9);
            counters++;
        } else if (rec.u.event.etype == 2) {
            begins++;
        } else if (rec.u.event.etype == 3 && rec.u.event.pid == HVFXT_KOID_VM) {
            assert_true(nends < 8);
            ends[nends++] = rec.u.event.ts;
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(counters, 5);
    /* On vCPU 0's track: process + 2 frames for each event, each closed at its own end. */
    assert_int_equal(nends, 6);
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(ends[i], 1001000);
        assert_int_equal(ends[3 + i], 1001010);
    }
    assert_int_equal(begins, 6 + 4); /* and the thread's track: the 2 frames of each */
    fxtr_free(&r);
    free(buf);
    profile_free(&p);
}

/* Off-CPU records on the timeline (`report --wall`): on their thread's track only, each spanning
 * the time it stands for before its timestamp (from no earlier than the track's last sample),
 * never merged with what follows; the vCPU's track shows only what ran there. */
static void test_timeline_off_cpu(void **state)
{
    (void)state;
    struct profile p;
    struct hv_err err;
    profile_init(&p);
    p.ticks_per_sec = 1000000000ull;
    p.period_ns = 1000000;
    p.wall = p.weight_us = true;
    const uint64_t on[1] = {0x401000}, off[2] = {HVFXT_OFF_CPU_FRAME_BASE + 4, 0xffffffff81000010};
    /* A sample at 10 ms, then 30 ms off the CPU ending at 50 ms, then 5 ms ending at 52 ms
     * (it began before the last record's end: cut there). */
    assert_int_equal(profile_add_sample(&p,
                                        &(struct prof_sample_in){.ts = 10000000,
                                                                 .vcpu = 0,
                                                                 .pid = 0x10000001,
                                                                 .tid = 0x40000001,
                                                                 .cpl = 3,
                                                                 .addrs = on,
                                                                 .n = 1,
                                                                 .weight = 1000},
                                        &err),
                     0);
    assert_int_equal(profile_add_sample(&p,
                                        &(struct prof_sample_in){.ts = 50000000,
                                                                 .vcpu = 0,
                                                                 .pid = 0x10000001,
                                                                 .tid = 0x40000001,
                                                                 .cpl = 0,
                                                                 .addrs = off,
                                                                 .n = 2,
                                                                 .weight = 30000},
                                        &err),
                     1);
    assert_int_equal(profile_add_sample(&p,
                                        &(struct prof_sample_in){.ts = 52000000,
                                                                 .vcpu = 0,
                                                                 .pid = 0x10000001,
                                                                 .tid = 0x40000001,
                                                                 .cpl = 0,
                                                                 .addrs = off,
                                                                 .n = 2,
                                                                 .weight = 5000},
                                        &err),
                     2);
    p.samples.v[1].off_cpu_ns = 30000000;
    p.samples.v[2].off_cpu_ns = 5000000;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct report_opts o = {.title = "off-cpu"};
    assert_int_equal(report_write(REPORT_TIMELINE, &p, &o, out, &err), 0);
    assert_int_equal(fclose(out), 0);
    struct fxtr_reader r;
    fxtr_init(&r, buf, len);
    struct fxtr_record rec;
    uint64_t vcpu_begins = 0, thread_begin[16], thread_end[16];
    unsigned nb = 0, ne = 0;
    int rc;
    while ((rc = fxtr_next(&r, &rec, &err)) == 1) {
        if (rec.type != FXTR_EVENT || (rec.u.event.etype != 2 && rec.u.event.etype != 3))
            continue;
        if (rec.u.event.pid == HVFXT_KOID_VM) {
            vcpu_begins += rec.u.event.etype == 2;
            continue;
        }
        if (rec.u.event.etype == 2 && nb < 16)
            thread_begin[nb++] = rec.u.event.ts;
        else if (rec.u.event.etype == 3 && ne < 16)
            thread_end[ne++] = rec.u.event.ts;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(vcpu_begins, 2); /* the sample's process and frame */
    /* The thread: 1 slice for the sample, 2 for each off-CPU record. */
    assert_int_equal(nb, 5);
    assert_int_equal(ne, 5);
    assert_int_equal(thread_begin[0], 10000000);
    assert_int_equal(thread_end[0], 10500000); /* half a period into the gap */
    assert_int_equal(thread_begin[1], 20000000);
    assert_int_equal(thread_begin[2], 20000000);
    assert_int_equal(thread_end[1], 50000000);
    assert_int_equal(thread_end[2], 50000000);
    assert_int_equal(thread_begin[3], 50000000); /* not before the last record */
    assert_int_equal(thread_end[3], 52000000);
    fxtr_free(&r);
    free(buf);
    profile_free(&p);
}

/* Names from a hostile recording carry terminal escapes: no format passes a control character
 * through (issue "reliability" item 14); an empty profile writes every format without undefined
 * behaviour (qsort of a NULL array, item 9; UBSan in the sanitizer build). */
static void test_hostile_names_and_empty(void **state)
{
    struct ctx *c = *state;
    struct hv_err err;
    assert_int_equal(profile_set_name(&c->p, SYNTH_PID, 0, "evil\x1b[2J\x1b]0;title\x07", 7, &err),
                     0);
    for (int f = 0; f < REPORT_NFORMATS; f++) {
        if (report_format_is_binary((enum report_format)f))
            continue;
        size_t len;
        char *text = read_file(write_format(c, (enum report_format)f), &len);
        for (size_t i = 0; i < len; i++)
            if (text[i] == 0x1b || text[i] == 0x07)
                fail_msg("%s: control character 0x%02x at byte %zu",
                         report_format_name((enum report_format)f), text[i], i);
        free(text);
    }
    struct profile empty;
    profile_init(&empty);
    for (int f = 0; f < REPORT_NFORMATS; f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/empty-%s", c->dir,
                 report_format_filename((enum report_format)f));
        FILE *out = fopen(path, "wb");
        struct report_opts o = {0};
        assert_int_equal(report_write((enum report_format)f, &empty, &o, out, &err), 0);
        fclose(out);
    }
    profile_free(&empty);
}

static void test_formats(void **state)
{
    (void)state;
    assert_int_equal(report_format_parse("perf-script"), REPORT_PERF_SCRIPT);
    assert_int_equal(report_format_parse("timeline"), REPORT_TIMELINE);
    assert_int_equal(report_format_parse("nope"), -1);
}

/* One sample standing for a million: every other stack is then narrower than 0.1 px at the
 * graph's width, left out of the SVG, and counted on it (flamegraph.pl's --minwidth). */
static void test_svg_minwidth(void **state)
{
    struct ctx *c = *state;
    uint64_t was = c->p.samples.v[0].weight;
    c->p.samples.v[0].weight = 1000000;
    size_t len;
    char *svg = read_file(write_format(c, REPORT_SVG), &len);
    c->p.samples.v[0].weight = was;
    svg = realloc(svg, len + 1);
    svg[len] = 0;
    const char *note = strstr(svg, "<text id=\"minwidth\"");
    assert_non_null(note);
    unsigned hidden = 0;
    assert_int_equal(sscanf(strchr(note, '>') + 1, "%u frames narrower than 0.1 px", &hidden), 1);
    assert_true(hidden > 0);
    /* The heavy stack's leaf is still drawn. */
    assert_non_null(strstr(svg, "data-n=\"fixture_leaf\""));
    free(svg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folded),
        cmocka_unit_test(test_pprof),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_perf_script),
        cmocka_unit_test(test_top),
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_timeline_exits_and_steal),
        cmocka_unit_test(test_timeline_off_cpu),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_hostile_names_and_empty),
        cmocka_unit_test(test_svg_minwidth),
        cmocka_unit_test(test_top_process_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
