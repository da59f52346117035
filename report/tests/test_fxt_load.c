/* Loading recordings written with fxt/'s encoders (the recorder's own code path): samples,
 * partial + completion records joined by continuation id, modules, mappings, names, settings;
 * and the errors for files that are not hvprof recordings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/encode.h"
#include "schema/encode.h"
#include "rec_buf.h"
#include "report/fxt_load.h"
#include "testutil.h"

static const uint8_t build_id[20] = {0xaa, 0xbb, 0xcc, 1,  2,  3,  4,  5,  6,  7,
                                     8,    9,    10,   11, 12, 13, 14, 15, 16, 17};

static void header(struct buf *b, const char *provider0)
{
    put(b, fxt_enc_magic(b->w + b->n, CAP(b)));
    put(b, fxt_enc_provider_info(b->w + b->n, CAP(b), 0, provider0, strlen(provider0)));
    put(b, fxt_enc_provider_info(b->w + b->n, CAP(b), 1, "vcpu0", 5));
    put(b, fxt_enc_provider_section(b->w + b->n, CAP(b), 0));
    put(b, fxt_enc_init(b->w + b->n, CAP(b), 1000000000ull));
}

static void build_recording(struct buf *b)
{
    header(b, "hvprof");
    put(b, fxt_enc_kobj_process(b->w + b->n, CAP(b), 0x10000001, "spin"));
    put(b, fxt_enc_kobj_thread(b->w + b->n, CAP(b), 0x40000001, "spin-main", 0x10000001));
    /* A Linux guest's process and thread: the guest's own ids as arguments (fxt-samples.md
     * section 4), the process named twice (the last name counts), a guest id out of range
     * ignored. */
    struct fxt_arg pid = {.type = FXT_ARG_I64, .name = fxt_str_inline("guest_pid"), .v.i64 = 77};
    struct fxt_arg targs[2] = {
        {.type = FXT_ARG_KOID, .name = fxt_str_inline("process"), .v.u64 = 0x10000002},
        {.type = FXT_ARG_I64, .name = fxt_str_inline("guest_tid"), .v.i64 = 78}};
    put(b, fxt_enc_kobj(b->w + b->n, CAP(b), 1, 0x10000002, fxt_str_inline("sh"), &pid, 1));
    put(b, fxt_enc_kobj(b->w + b->n, CAP(b), 1, 0x10000002, fxt_str_inline("hv_busy"), &pid, 1));
    put(b, fxt_enc_kobj(b->w + b->n, CAP(b), 2, 0x40000002, fxt_str_inline("hv_busy"), targs, 2));
    targs[1].v.i64 = -3;
    put(b, fxt_enc_kobj(b->w + b->n, CAP(b), 2, 0x40000003, fxt_str_inline("odd"), targs, 2));
    struct hvfxt_module m = {.id = 1,
                             .name = "[elf@0x400000]",
                             .name_len = 14,
                             .build_id = build_id,
                             .build_id_len = 20};
    put(b, hvfxt_enc_module(b->w + b->n, CAP(b), &m));
    struct hvfxt_module k = {.id = 2, .name = "guest-kernel", .name_len = 12};
    put(b, hvfxt_enc_module(b->w + b->n, CAP(b), &k));
    struct hvfxt_mapping mp = {.pid = 0x10000001,
                               .module_id = 1,
                               .start = 0x401000,
                               .size = 0x2000,
                               .vaddr = 0x401000,
                               .flags = 5,
                               .ts = 1};
    put(b, hvfxt_enc_mapping(b->w + b->n, CAP(b), &mp));
    struct hvfxt_mapping km = {.pid = 0x10000000,
                               .module_id = 2,
                               .start = 0xffffffff80100000ull,
                               .size = 0x100000,
                               .vaddr = 0x100000,
                               .flags = 5,
                               .ts = 1};
    put(b, hvfxt_enc_mapping(b->w + b->n, CAP(b), &km));
    /* The sampler's settings: the rate as "hz" (sampler/sampler.c). */
    struct fxt_arg a = {.type = FXT_ARG_U64, .name = fxt_str_inline("hz"), .v.u64 = 4000};
    put(b, hvfxt_enc_marker(b->w + b->n, CAP(b), "session_start", 5, &a, 1));

    put(b, fxt_enc_provider_section(b->w + b->n, CAP(b), 1));
    put(b, fxt_enc_init(b->w + b->n, CAP(b), 1000000000ull));
    /* 1: a complete user sample (pc + user stack). */
    uint64_t us[] = {0x401100, 0x401200};
    struct hvfxt_sample s = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                       HVFXT_SF_USER_STACK | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                                       HVFXT_SF_PC,
                             .pid = 0x10000001,
                             .tid = 0x40000001,
                             .ts = 100,
                             .user_stack = us,
                             .n_user = 2,
                             .vcpu = 0,
                             .cpl = 3,
                             .pc = 0x401050};
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &s));
    /* 2 and 3: two kernel exits sharing one deferred user walk (continuation 9). */
    uint64_t ks[] = {0xffffffff80100200ull};
    struct hvfxt_sample k1 = {.fields = HVFXT_SF_CONTINUATION | HVFXT_SF_PID | HVFXT_SF_TID |
                                        HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                                        HVFXT_SF_PC | HVFXT_SF_KERNEL_STACK,
                              .continuation = 9,
                              .pid = 0x10000001,
                              .tid = 0x40000001,
                              .ts = 200,
                              .vcpu = 0,
                              .cpl = 0,
                              .pc = 0xffffffff80100100ull,
                              .kernel_stack = ks,
                              .n_kernel = 1};
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &k1));
    k1.ts = 300;
    k1.pc = 0xffffffff80100110ull;
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &k1));
    /* 4: a partial whose completion never comes (continuation 10). */
    k1.continuation = 10;
    k1.ts = 400;
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &k1));
    uint64_t cu[] = {0x401060, 0x401200};
    struct hvfxt_sample comp = {.fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_USER_STACK,
                                .completion = 9,
                                .user_stack = cu,
                                .n_user = 2};
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &comp));
    /* 5: a kernel sample that knows the exact user PC at kernel entry but defers the rest of
     * the user stack (continuation 11): the completion's first frame gives way to that PC. */
    uint64_t entry[] = {0x401070};
    k1.fields |= HVFXT_SF_USER_STACK;
    k1.continuation = 11;
    k1.ts = 500;
    k1.user_stack = entry;
    k1.n_user = 1;
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &k1));
    uint64_t cu2[] = {0x401080, 0x401210};
    comp.completion = 11;
    comp.user_stack = cu2;
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &comp));
    /* 6: a kernel sample with its whole user stack, walked at once from the entry frame. */
    uint64_t now[] = {0x401090, 0x401220};
    k1.fields &= ~(uint64_t)HVFXT_SF_CONTINUATION;
    k1.continuation = 0;
    k1.ts = 600;
    k1.user_stack = now;
    k1.n_user = 2;
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &k1));
}

static const struct prof_sample *sample_at(const struct profile *p, uint64_t ts)
{
    for (size_t i = 0; i < p->samples.n; i++)
        if (p->samples.v[i].ts == ts)
            return &p->samples.v[i];
    fail_msg("no sample at %llu", (unsigned long long)ts);
    return NULL;
}

static void test_load(void **state)
{
    (void)state;
    static struct buf b;
    b.n = 0;
    build_recording(&b);
    struct profile p;
    profile_init(&p);
    struct fxt_load_stats st;
    struct hv_err err;
    if (fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.samples, 6);
    assert_int_equal(st.completions, 2);
    assert_int_equal(st.partial_without_completion, 1);
    assert_int_equal(st.modules, 2);
    assert_int_equal(st.mappings, 2);
    assert_int_equal(p.period_ns, 250000);
    assert_int_equal(p.samples.n, 6);
    assert_string_equal(profile_process_name(&p, 0x10000001), "spin");
    assert_string_equal(profile_thread_name(&p, 0x10000001, 0x40000001), "spin-main");
    assert_string_equal(profile_process_name(&p, 0x10000000), "[kernel]");
    assert_string_equal(profile_process_name(&p, 0x10000002), "hv_busy");
    assert_int_equal(profile_shown_pid(&p, 0x10000002), 77);
    assert_int_equal(profile_shown_tid(&p, 0x10000002, 0x40000002), 78);
    assert_int_equal(profile_shown_tid(&p, 0x10000002, 0x40000003), 0x40000003);
    assert_int_equal(profile_shown_pid(&p, 0x10000001), 0x10000001);
    /* The kernel module's mapping applies to every address space. */
    assert_true(p.modules.v[1].kernel);
    assert_int_equal(p.mappings.v[1].pid, PROF_PID_ANY);
    assert_int_equal(p.mappings.v[1].bias, 0xffffffff80000000ull);
    assert_int_equal(p.mappings.v[0].bias, 0);
    assert_int_equal(p.mappings.v[0].file_offset, 0);

    /* Sample order: the complete one first, then the joined pair, then the orphan. */
    const struct prof_sample *s0 = &p.samples.v[0];
    assert_int_equal(s0->nframes, 3);
    assert_int_equal(p.frames.v[s0->first].addr, 0x401050);
    assert_int_equal(p.frames.v[s0->first].flags, 0);
    assert_int_equal(p.frames.v[s0->first + 1].flags, PROF_FRAME_RA);
    for (int i = 1; i <= 2; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        assert_int_equal(s->cpl, 0);
        assert_int_equal(s->nframes, 4); /* pc, 1 kernel RA, user pc, 1 user RA */
        const struct prof_frame *f = &p.frames.v[s->first];
        assert_int_equal(f[0].flags, PROF_FRAME_KERNEL);
        assert_int_equal(f[1].flags, PROF_FRAME_KERNEL | PROF_FRAME_RA);
        assert_int_equal(f[2].addr, 0x401060);
        assert_int_equal(f[2].flags, 0); /* the interrupted user pc is exact */
        assert_int_equal(f[3].flags, PROF_FRAME_RA);
    }
    assert_int_equal(p.samples.v[1].ts + 100, p.samples.v[2].ts);
    const struct prof_sample *orphan = sample_at(&p, 400);
    assert_int_equal(orphan->nframes, 2);
    /* The entry PC first, then the completion's callers; and a whole stack walked at once. */
    const uint64_t want5[] = {0x401070, 0x401210}, want6[] = {0x401090, 0x401220};
    const uint64_t *want[] = {want5, want6};
    for (int i = 0; i < 2; i++) {
        const struct prof_sample *s = sample_at(&p, 500 + 100 * (uint64_t)i);
        assert_int_equal(s->nframes, 4);
        const struct prof_frame *f = &p.frames.v[s->first];
        assert_int_equal(f[2].addr, want[i][0]);
        assert_int_equal(f[2].flags, 0); /* exact: the PC at kernel entry */
        assert_int_equal(f[3].addr, want[i][1]);
        assert_int_equal(f[3].flags, PROF_FRAME_RA);
    }
    /* Symbolizing without symbol files keeps every frame as module+offset / raw. */
    assert_int_equal(profile_symbolize(&p, NULL, NULL, NULL), 0);
    assert_string_equal(p.funcs.v[p.locs.v[p.frames.v[s0->first].loc].func].name,
                        "[elf@0x400000]+0x401050");
    const struct prof_frame *kf = &p.frames.v[p.samples.v[1].first];
    assert_string_equal(p.funcs.v[p.locs.v[kf->loc].func].name, "guest-kernel+0x100100");
    profile_free(&p);
}

/* A kernel stack through an interrupt frame (guestwalk's gw_stack.exact, the walk word's bits
 * 34..63): the frame where the interrupt struck is exact, so it is looked up as it is (a
 * function's first byte names that function, not the one before); the others are return
 * addresses. */
static void test_kernel_exact_frames(void **state)
{
    (void)state;
    static struct buf b;
    b.n = 0;
    header(&b, "hvprof");
    uint64_t ks[] = {0xffffffff80100100ull, 0xffffffff80100200ull, 0xffffffff80100300ull,
                     0xffffffff80100400ull};
    struct hvfxt_sample k = {.fields = HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                                       HVFXT_SF_PC | HVFXT_SF_KERNEL_STACK | HVFXT_SF_WALK,
                             .ts = 100,
                             .cpl = 0,
                             .pc = ks[0],
                             .kernel_stack = ks,
                             .n_kernel = 4,
                             .walk = hvfxt_walk_kernel_exact(1u << 2)};
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &k));
    struct profile p;
    profile_init(&p);
    struct hv_err err;
    if (fxt_load_profile(b.w, b.n * 8, &p, NULL, NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(p.samples.n, 1);
    const struct prof_frame *f = &p.frames.v[p.samples.v[0].first];
    assert_int_equal(p.samples.v[0].nframes, 4);
    assert_int_equal(f[0].flags, PROF_FRAME_KERNEL);
    assert_int_equal(f[1].flags, PROF_FRAME_KERNEL | PROF_FRAME_RA);
    assert_int_equal(f[2].addr, 0xffffffff80100300ull);
    assert_int_equal(f[2].flags, PROF_FRAME_KERNEL);
    assert_int_equal(f[3].flags, PROF_FRAME_KERNEL | PROF_FRAME_RA);
    /* The encoding: frame i (1..30) at bit 34 + i - 1; frame 0 and frames past 30 unmarked. */
    assert_int_equal(hvfxt_walk_kernel_exact(1u << 2), 1ull << 35);
    assert_false(hvfxt_walk_kernel_frame_exact(1ull << 35, 1));
    assert_true(hvfxt_walk_kernel_frame_exact(1ull << 35, 2));
    assert_int_equal(hvfxt_walk_kernel_exact(1u), 0);
    assert_false(hvfxt_walk_kernel_frame_exact(~0ull, 31));
    profile_free(&p);
}

static void test_not_a_recording(void **state)
{
    (void)state;
    struct profile p;
    struct hv_err err;
    profile_init(&p);
    static const char text[] = "this is a text file, not a recording\n";
    assert_int_equal(fxt_load_profile(text, sizeof(text), &p, NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "not an hvprof recording"));
    assert_non_null(strstr(err.msg, "FXT magic"));
    profile_free(&p);

    /* FXT, but somebody else's. */
    static struct buf b;
    b.n = 0;
    header(&b, "chrome");
    profile_init(&p);
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "not an hvprof recording"));
    profile_free(&p);

    /* Truncated recording: what it holds (test_cut_anywhere), or an error naming the cut or
     * the offset, never a crash. */
    b.n = 0;
    build_recording(&b);
    for (size_t cut = 8; cut < b.n * 8; cut += 13) {
        profile_init(&p);
        if (fxt_load_profile(b.w, cut, &p, NULL, NULL, NULL, &err) < 0)
            assert_true(strstr(err.msg, "malformed") || strstr(err.msg, "not an hvprof") ||
                        strstr(err.msg, "cut at byte"));
        profile_free(&p);
    }

    /* The file variant names the path. */
    profile_init(&p);
    assert_int_equal(fxt_load_profile_file("/nonexistent/rec.fxt", &p, NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/rec.fxt"));
    profile_free(&p);
}

/* Exit events (docs/exits.md) beside a timer sample: a timer profile leaves them out and counts
 * them; an exit profile holds them alone, each rooted at its site's frame with its host time,
 * the one without stacks as that frame alone. */
static void test_exit_events(void **state)
{
    (void)state;
    static struct buf b;
    b.n = 0;
    header(&b, "hvprof");
    put(&b, fxt_enc_provider_section(b.w + b.n, CAP(&b), 1));
    put(&b, fxt_enc_init(b.w + b.n, CAP(&b), 1000000000ull));
    uint64_t ks[] = {0xffffffff80100010ull, 0xffffffff80100020ull};
    struct hvfxt_sample timer = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                           HVFXT_SF_VCPU | HVFXT_SF_CPL | HVFXT_SF_PC,
                                 .pid = 0x10000001,
                                 .tid = 0x40000001,
                                 .ts = 100,
                                 .cpl = 3,
                                 .pc = 0x401000};
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &timer));
    uint32_t site = 2u << 24 | 1u << 16; /* pio out, port range 1, offset 0 */
    struct hvfxt_sample ex = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                        HVFXT_SF_VCPU | HVFXT_SF_CPL | HVFXT_SF_PC |
                                        HVFXT_SF_KERNEL_STACK | HVFXT_SF_EXIT | HVFXT_SF_EXIT_NS,
                              .pid = 0x10000001,
                              .tid = 0x40000001,
                              .ts = 200,
                              .cpl = 0,
                              .pc = 0xffffffff80100008ull,
                              .kernel_stack = ks,
                              .n_kernel = 2,
                              .exit_site = site,
                              .exit_ns = 1234};
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &ex));
    struct hvfxt_sample bare = {.fields = HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_EXIT |
                                          HVFXT_SF_EXIT_NS,
                                .ts = 300,
                                .exit_site = site,
                                .exit_ns = 99};
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &bare));

    struct profile p;
    struct fxt_load_stats st;
    struct hv_err err;
    profile_init(&p);
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(p.samples.n, 1);
    assert_int_equal(st.exit_events_skipped, 2);
    assert_int_equal(p.samples.v[0].exit_ns, 0);
    profile_free(&p);

    profile_init(&p);
    p.exits = true;
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(p.samples.n, 2);
    assert_int_equal(st.samples_skipped, 1);
    const struct prof_sample *e = &p.samples.v[0];
    assert_int_equal(e->exit_ns, 1234);
    assert_int_equal(e->nframes, 4); /* pc, 2 kernel frames, the site */
    assert_int_equal(p.frames.v[e->first].addr, 0xffffffff80100008ull);
    assert_int_equal(p.frames.v[e->first + 3].addr, hvfxt_exit_frame(site));
    assert_int_equal(hvfxt_exit_frame(site), HVFXT_EXIT_FRAME_BASE + ((2u << 15 | 1u << 7) << 2));
    e = &p.samples.v[1];
    assert_int_equal(e->exit_ns, 99);
    assert_int_equal(e->nframes, 1);
    assert_int_equal(p.frames.v[e->first].addr, hvfxt_exit_frame(site));
    profile_free(&p);
}

/* Off-CPU records (docs/off-cpu.md) beside a timer sample: a profile of samples leaves them out
 * and counts them; an off-CPU profile holds them alone, weighed in microseconds, each under a
 * leaf frame naming its state (kernel frames return addresses, the user entry PC exact); a
 * wall-clock profile holds both, the sample weighed by the sampling period. A record below half
 * a microsecond is none. */
static void test_off_cpu_records(void **state)
{
    (void)state;
    static struct buf b;
    b.n = 0;
    header(&b, "hvprof");
    struct fxt_arg period = {
        .type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_PERIOD_NS), .v.u64 = 250000};
    put(&b, hvfxt_enc_marker(b.w + b.n, CAP(&b), HVFXT_SESSION_START, 1, &period, 1));
    put(&b, fxt_enc_provider_section(b.w + b.n, CAP(&b), 1));
    put(&b, fxt_enc_init(b.w + b.n, CAP(&b), 1000000000ull));
    struct hvfxt_sample timer = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                           HVFXT_SF_VCPU | HVFXT_SF_CPL | HVFXT_SF_PC,
                                 .pid = 0x10000001,
                                 .tid = 0x40000001,
                                 .ts = 100,
                                 .cpl = 3,
                                 .pc = 0x401000};
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &timer));
    uint64_t ks[] = {0xffffffff80100010ull, 0xffffffff80100020ull}, us[] = {0x401234, 0x401500};
    struct hvfxt_sample off = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                         HVFXT_SF_VCPU | HVFXT_SF_CPL | HVFXT_SF_KERNEL_STACK |
                                         HVFXT_SF_USER_STACK | HVFXT_SF_OFF_CPU_NS |
                                         HVFXT_SF_TASK_STATE,
                               .pid = 0x10000001,
                               .tid = 0x40000002,
                               .ts = 5000000,
                               .cpl = 0,
                               .kernel_stack = ks,
                               .n_kernel = 2,
                               .user_stack = us,
                               .n_user = 2,
                               .off_cpu_ns = 4500400,
                               .task_state = HVFXT_TASK_DISK_SLEEP};
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &off));
    struct hvfxt_sample bare = {.fields =
                                    HVFXT_SF_BOOT_TS | HVFXT_SF_OFF_CPU_NS | HVFXT_SF_TASK_STATE,
                                .ts = 6000000,
                                .off_cpu_ns = 1600,
                                .task_state = HVFXT_TASK_RUNNABLE};
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &bare));
    struct hvfxt_sample tiny = bare;
    tiny.off_cpu_ns = 499;
    put(&b, hvfxt_enc_sample(b.w + b.n, CAP(&b), &tiny));

    struct profile p;
    struct fxt_load_stats st;
    struct hv_err err;
    profile_init(&p);
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(p.samples.n, 1);
    assert_int_equal(st.off_cpu_skipped, 3);
    assert_false(p.weight_us);
    assert_int_equal(p.samples.v[0].weight, 1);
    profile_free(&p);

    profile_init(&p);
    p.off_cpu = true;
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(p.samples.n, 2);
    assert_int_equal(st.samples_skipped, 1);
    assert_true(p.weight_us);
    const struct prof_sample *o = &p.samples.v[0];
    assert_int_equal(o->weight, 4500); /* microseconds, rounded */
    assert_int_equal(o->off_cpu_ns, 4500400);
    assert_int_equal(o->nframes, 5); /* the state, 2 kernel, 2 user frames */
    const struct prof_frame *f = &p.frames.v[o->first];
    assert_int_equal(f[0].addr, hvfxt_off_cpu_frame(HVFXT_TASK_DISK_SLEEP));
    assert_int_equal(f[0].addr, HVFXT_OFF_CPU_FRAME_BASE + 8);
    assert_true(f[0].flags & PROF_FRAME_KERNEL);
    assert_false(f[0].flags & PROF_FRAME_RA);
    assert_int_equal(f[1].addr, ks[0]);
    assert_true((f[1].flags & PROF_FRAME_RA) && (f[1].flags & PROF_FRAME_KERNEL));
    assert_int_equal(f[3].addr, us[0]);
    assert_false(f[3].flags & (PROF_FRAME_RA | PROF_FRAME_KERNEL)); /* the entry PC */
    assert_true(f[4].flags & PROF_FRAME_RA);
    o = &p.samples.v[1];
    assert_int_equal(o->weight, 2);
    assert_int_equal(o->nframes, 1);
    assert_int_equal(p.frames.v[o->first].addr, hvfxt_off_cpu_frame(HVFXT_TASK_RUNNABLE));
    assert_int_equal(profile_total_weight(&p), 4502);
    profile_free(&p);

    profile_init(&p);
    p.wall = true;
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(p.samples.n, 3);
    assert_int_equal(p.samples.v[0].weight, 250); /* the period, 250 us */
    assert_int_equal(profile_total_weight(&p), 250 + 4502);
    profile_free(&p);
}

/* Steal markers (schema.h HVFXT_VCPU_STEAL): each with its vCPU and cumulative steal, in the
 * recording's order; one lacking either argument, or of a vCPU out of range, is left out. */
static void test_steal_markers(void **state)
{
    (void)state;
    static struct buf b;
    b.n = 0;
    header(&b, "hvprof");
    const struct {
        uint64_t ts;
        uint32_t vcpu;
        uint64_t ns;
        unsigned nargs;
    } m[] = {{100, 0, 0, 2}, {150, 1, 7, 2}, {200, 0, 40, 2}, {250, 0, 41, 1}, {300, 0xffff, 1, 2}};
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        struct fxt_arg a[2] = {
            {.type = FXT_ARG_U32, .name = fxt_str_inline(HVFXT_ARG_VCPU), .v.u32 = m[i].vcpu},
            {.type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_STEAL_NS), .v.u64 = m[i].ns}};
        put(&b, hvfxt_enc_marker(b.w + b.n, CAP(&b), HVFXT_VCPU_STEAL, m[i].ts, a, m[i].nargs));
    }
    struct profile p;
    struct fxt_load_stats st;
    struct hv_err err;
    profile_init(&p);
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(p.steal.n, 3);
    assert_int_equal(p.steal.v[0].ts, 100);
    assert_int_equal(p.steal.v[1].vcpu, 1);
    assert_int_equal(p.steal.v[1].steal_ns, 7);
    assert_int_equal(p.steal.v[2].ts, 200);
    assert_int_equal(p.steal.v[2].steal_ns, 40);
    assert_int_equal(p.samples.n, 0);
    profile_free(&p);
}

/* A recording cut at any byte after its header (a copy interrupted, `head -c`) loads: every
 * complete record before the cut, the same as the file cut at that record's end, with the cut
 * said in the stats. */
static void test_cut_anywhere(void **state)
{
    (void)state;
    static struct buf b;
    b.n = 0;
    header(&b, "hvprof");
    size_t head = b.n * 8;
    b.n = 0;
    build_recording(&b);
    size_t len = b.n * 8;
    size_t boundary = head, next = head; /* the last record end at or before the cut */
    for (size_t cut = head; cut <= len; cut++) {
        /* Where the record at `boundary` ends: its header's size (FXT spec, "Record header"). */
        while (next <= cut && next < len) {
            boundary = next;
            uint64_t h;
            memcpy(&h, (const uint8_t *)b.w + next, 8);
            next += 8 * ((h >> 4) & 0xfff);
        }
        if (next <= cut)
            boundary = next;
        struct profile whole, cutp;
        struct fxt_load_stats sw, sc;
        struct hv_err err = {0};
        profile_init(&whole);
        profile_init(&cutp);
        assert_int_equal(fxt_load_profile(b.w, boundary, &whole, &sw, NULL, NULL, &err), 0);
        if (fxt_load_profile(b.w, cut, &cutp, &sc, NULL, NULL, &err) != 0)
            fail_msg("cut at %zu of %zu: %s", cut, len, err.msg);
        assert_int_equal(sc.cut, cut != boundary);
        if (sc.cut) {
            assert_int_equal(sc.cut_offset, boundary);
            assert_int_equal(sc.cut_have, cut - boundary);
        }
        assert_int_equal(sc.records, sw.records);
        assert_int_equal(cutp.samples.n, whole.samples.n);
        assert_int_equal(cutp.names.n, whole.names.n);
        profile_free(&whole);
        profile_free(&cutp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_kernel_exact_frames),
        cmocka_unit_test(test_not_a_recording),
        cmocka_unit_test(test_exit_events),
        cmocka_unit_test(test_off_cpu_records),
        cmocka_unit_test(test_steal_markers),
        cmocka_unit_test(test_cut_anywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
