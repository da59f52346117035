/* The sampler's exit path without KVM: saved vCPU snapshots and a synthetic guest (page tables,
 * code, user and kernel frame-pointer chains built by guestwalk's test image) go through
 * exit_tick/exit_take exactly as a timer exit would, and each test reads the vCPU rings
 * back with the schema decoder and compares whole records: identity, stacks, continuation ids,
 * stop reasons. Covers every continuation path (opened, reused, completed here or on another
 * vCPU, abandoned on timeout, at the end and when the table is full), PTI CR3 pairs, idle vCPUs
 * and ring drops, and a kernel walk that reaches the user entry frame (the user stack walked at
 * once, or deferred). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "guestos/generic/generic.h"
#include "guestwalk/tests/guest_image.h"
#include "sampler/exit/continuation.h"
#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"
#include "fxt/encode.h"
#include "schema/decode.h"
#include "schema/join.h"

#define UCODE    0x400000ull
#define USTACK   0x7ffe00000000ull
#define KCODE    0xffffffff81000000ull
#define KSTACK   0xffffc90000000000ull
#define PERIOD   1000000ull /* 1 kHz */
#define NFRAMES  4
#define MAXREC   1024
#define FS_BASE0 0x7f0000001000ull

static const uint64_t uret[NFRAMES] = {UCODE + 0x110, UCODE + 0x220, UCODE + 0x330, 0};
static const uint64_t kret[NFRAMES] = {KCODE + 0x110, KCODE + 0x220, KCODE + 0x330, 0};

struct fx {
    struct gimg g;
    struct sampler *s;
    char path[64];
    uint64_t now; /* the test's clock: every tick() advances it by one period */
    struct hvfxt_record rec[MAXREC];
    unsigned nrec;
};

static int setup_with(void **state, uint64_t buffer_bytes)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(gimg_init(&f->g, false), 0);
    assert_int_equal(gimg_map_fresh(&f->g, UCODE, 0x1000, GIMG_USER_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, USTACK, 0x4000, GIMG_USER_RW | GIMG_XD), 0);
    assert_int_equal(gimg_map_fresh(&f->g, KCODE, 0x1000, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, KSTACK, 0x4000, GIMG_KERN_RW | GIMG_XD), 0);
    /* Three-record chains ending in a zero return address: [next fp, ret] each. */
    assert_int_equal(gimg_write_chain(&f->g, USTACK + 0x100, NFRAMES, 0x40, uret), 0);
    assert_int_equal(gimg_write_chain(&f->g, KSTACK + 0x100, NFRAMES, 0x40, kret), 0);

    snprintf(f->path, sizeof(f->path), "/tmp/hvprof-sample-XXXXXX");
    int fd = mkstemp(f->path);
    assert_true(fd >= 0);
    close(fd);
    struct sampler_config cfg = {
        .out_path = f->path,
        .nvcpus = 2,
        .hz = 1000000000ull / PERIOD,
        .mode = SAMPLER_MODE_CPU,
        .max_depth = 32,
        .buffer_bytes = buffer_bytes,
        .recheck_ns = 200000,
        .abandon_periods = 3, /* raised to SAMPLER_ABANDON_MIN_NS = 10 ticks at 1 kHz */
        .quiet = true,
    };
    struct hv_err err;
    f->s = sampler_create(&cfg, &err);
    if (!f->s)
        fail_msg("%s", err.msg);
    f->s->mem = f->s->env.mem = &f->g.mem;
    /* The recording begins (sampler_attach does this for a real VM): the file takes its name,
     * where the tests read it as it grows. */
    if (hv_output_commit(&f->s->out, &err) < 0)
        fail_msg("%s", err.msg);
    for (unsigned i = 0; i < cfg.nvcpus; i++) {
        if (sampler_vcpu_prepare(&f->s->core.v[i], &err) < 0)
            fail_msg("%s", err.msg);
        f->s->core.v[i].next_due_ns = PERIOD;
    }
    f->now = PERIOD;
    *state = f;
    return 0;
}

/* The recording's source `name` (sampler/sources.c), or NULL when it does not run. */
static struct sampler_source *source_named(struct sampler *s, const char *name)
{
    for (size_t i = 0; i < s->nsrc; i++)
        if (!strcmp(s->src[i].ops->name, name))
            return &s->src[i];
    return NULL;
}

/* A recording without source `name`: destroyed and taken out of the table. */
static void drop_source(struct sampler *s, const char *name)
{
    struct sampler_source *src = source_named(s, name);
    assert_non_null(src);
    src->ops->destroy(src->st);
    size_t i = (size_t)(src - s->src);
    memmove(&s->src[i], &s->src[i + 1], (s->nsrc - i - 1) * sizeof(s->src[0]));
    s->nsrc--;
}

/* Source `name`'s summary lines into buf. */
static void source_summary(struct sampler *s, const char *name, char *buf, size_t len)
{
    struct sampler_source *src = source_named(s, name);
    assert_non_null(src);
    FILE *mem = fmemopen(buf, len, "w");
    src->ops->summary(src->st, &s->env, mem);
    fclose(mem);
}

/* Without stack copies (sampler/exit/stack_copy.h): this guest has no unwind tables, so every
 * user walk would be copied and its stack written later. Those tests below use setup_copies. */
static int setup(void **state)
{
    int rc = setup_with(state, 1u << 20);
    drop_source(((struct fx *)*state)->s, "copied-stacks");
    return rc;
}

static int setup_copies(void **state)
{
    return setup_with(state, 1u << 20);
}

static int setup_small_ring(void **state)
{
    int rc = setup_with(state, 4096 * 8); /* the smallest ring: 4096 words */
    drop_source(((struct fx *)*state)->s, "copied-stacks");
    return rc;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    for (unsigned i = 0; i < f->s->cfg.nvcpus; i++)
        if (f->s->core.v[i].walker_ok)
            gw_walker_fini(&f->s->core.v[i].walker);
    sampler_destroy(f->s);
    unlink(f->path);
    gimg_free(&f->g);
    free(f);
    return 0;
}

/* A stop in user mode (the chain at USTACK) or in the kernel (KSTACK) of thread `fs`. */
static struct gw_snapshot user_at(struct fx *f, uint64_t fs)
{
    struct gw_snapshot s = gimg_cpu(&f->g, UCODE + 8, USTACK + 0x80, USTACK + 0x100, 3);
    s.fs_base = fs;
    return s;
}

static struct gw_snapshot kernel_at(struct fx *f, uint64_t fs)
{
    struct gw_snapshot s = gimg_cpu(&f->g, KCODE + 8, KSTACK + 0x80, KSTACK + 0x100, 0);
    s.fs_base = fs;
    s.have = GW_SNAP_HALTED;
    return s;
}

/* A due tick on vCPU v one period after the last one. */
static void tick(struct fx *f, unsigned v, struct gw_snapshot snap)
{
    struct exit_vcpu *sv = &f->s->core.v[v];
    f->now = sv->next_due_ns;
    assert_int_equal(exit_tick(sv, f->now), EXIT_TICK_DUE);
    exit_take(sv, &snap, f->now, true);
}

/* A re-check exit between ticks: only allowed while continuations are pending. */
static void recheck(struct fx *f, unsigned v, struct gw_snapshot snap)
{
    struct exit_vcpu *sv = &f->s->core.v[v];
    uint64_t t = sv->next_due_ns - PERIOD / 2;
    assert_int_equal(exit_tick(sv, t), EXIT_TICK_RECHECK);
    exit_take(sv, &snap, t, false);
}

/* Move vCPU v's ring into f->rec (decoded; the words stay in a static buffer). */
static unsigned drain(struct fx *f, unsigned v)
{
    static uint64_t buf[1 << 16];
    size_t n = fxt_enc_magic(buf, 1 << 16);
    /* What the recording writer puts before a vCPU's records: its provider and tick rate. */
    n += fxt_enc_provider_info(buf + n, 16, 1, "vcpu", 4);
    n += fxt_enc_provider_section(buf + n, 16, 1);
    n += fxt_enc_init(buf + n, 16, 1000000000ull);
    struct fxt_ring *r = &f->s->core.v[v].ring;
    const uint64_t *w;
    uint32_t nw;
    while ((w = fxt_ring_peek(r, &nw))) {
        assert_true(n + nw <= (1u << 16));
        memcpy(buf + n, w, nw * 8);
        n += nw;
        fxt_ring_release(r, nw);
    }
    struct fxtr_reader rd;
    fxtr_init(&rd, buf, n * 8);
    struct hv_err err;
    int rc;
    f->nrec = 0;
    struct hvfxt_record x;
    while ((rc = hvfxt_next(&rd, &x, &err)) == 1) {
        if (x.kind == HVFXT_REC_OTHER)
            continue; /* the magic record */
        assert_true(f->nrec < MAXREC);
        f->rec[f->nrec++] = x;
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    fxtr_free(&rd);
    return f->nrec;
}

static void assert_stack(struct fxtr_words w, uint64_t pc0, const uint64_t *ret)
{
    assert_int_equal(w.n, NFRAMES);
    assert_int_equal(fxtr_word(w, 0), pc0);
    for (unsigned i = 1; i < NFRAMES; i++)
        assert_int_equal(fxtr_word(w, i), ret[i - 1]);
}

/* A due sample in user mode: the whole record. */
static void assert_user_sample(const struct hvfxt_record *x, uint32_t proc, uint32_t thread,
                               uint64_t ts, unsigned vcpu)
{
    assert_int_equal(x->kind, HVFXT_REC_SAMPLE);
    const struct hvfxt_sample_view *s = &x->u.sample;
    assert_int_equal(s->fields, HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU |
                                    HVFXT_SF_CPL | HVFXT_SF_PC | HVFXT_SF_WALK |
                                    HVFXT_SF_USER_STACK);
    assert_int_equal(s->pid, hvfxt_koid_guest_process(proc));
    assert_int_equal(s->tid, hvfxt_koid_guest_thread(thread));
    assert_int_equal(s->ts, ts);
    assert_int_equal(s->vcpu, vcpu);
    assert_int_equal(s->cpl, 3);
    assert_int_equal(s->pc, UCODE + 8);
    assert_int_equal(s->walk, hvfxt_walk_word(HVFXT_STOP_NONE, HVFXT_STOP_END, 0, 0));
    assert_stack(s->user_stack, UCODE + 8, uret);
}

/* A kernel sample, partial (continuation id) or not (0). */
static void assert_kernel_sample(const struct hvfxt_record *x, uint32_t thread, uint64_t ts,
                                 uint64_t cont)
{
    assert_int_equal(x->kind, HVFXT_REC_SAMPLE);
    const struct hvfxt_sample_view *s = &x->u.sample;
    uint64_t fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU |
                      HVFXT_SF_CPL | HVFXT_SF_PC | HVFXT_SF_WALK | HVFXT_SF_KERNEL_STACK;
    assert_int_equal(s->fields, cont ? fields | HVFXT_SF_CONTINUATION : fields);
    assert_int_equal(s->continuation, cont);
    assert_int_equal(s->tid, hvfxt_koid_guest_thread(thread));
    assert_int_equal(s->ts, ts);
    assert_int_equal(s->cpl, 0);
    assert_int_equal(s->pc, KCODE + 8);
    assert_int_equal(s->walk, hvfxt_walk_word(HVFXT_STOP_END,
                                              cont ? HVFXT_STOP_DEFERRED : HVFXT_STOP_NONE, 0, 0));
    assert_stack(s->kernel_stack, KCODE + 8, kret);
    assert_int_equal(s->user_stack.n, 0);
}

/* A completion: with the user stack, or abandoned (`why`) without one. */
static void assert_completion(const struct hvfxt_record *x, uint64_t id, uint32_t thread,
                              unsigned vcpu, unsigned why)
{
    assert_int_equal(x->kind, HVFXT_REC_SAMPLE);
    const struct hvfxt_sample_view *s = &x->u.sample;
    assert_int_equal(s->completion, id);
    assert_int_equal(s->tid, hvfxt_koid_guest_thread(thread));
    assert_int_equal(s->vcpu, vcpu);
    assert_int_equal(s->walk, hvfxt_walk_word(HVFXT_STOP_NONE, why, 0, 0));
    uint64_t base = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_PID | HVFXT_SF_TID |
                    HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_WALK;
    if (why == HVFXT_STOP_END) {
        assert_int_equal(s->fields, base | HVFXT_SF_USER_STACK | HVFXT_SF_CPL);
        assert_stack(s->user_stack, UCODE + 8, uret);
    } else {
        assert_int_equal(s->fields, base);
        assert_int_equal(s->user_stack.n, 0);
    }
}

#define CONT(vcpu, n) (((uint64_t)(vcpu) << 56) | (n))

/* The ids the sampler gave (slots of the lock-free tables, not a sequence): looked up after the
 * fact, which finds the existing entries. */
static uint32_t proc_of(struct fx *f)
{
    return id_proc_get(f->s->core.ids, f->g.root, NULL);
}

static uint32_t thread_of(struct fx *f, uint64_t fs)
{
    return id_thread_get(f->s->core.ids, proc_of(f), fs, 0);
}

static void test_user_sample(void **state)
{
    struct fx *f = *state;
    tick(f, 0, user_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 1);
    assert_user_sample(&f->rec[0], proc_of(f), thread_of(f, FS_BASE0), PERIOD, 0);
    assert_int_equal(f->s->core.v[0].st.user, 1);
}

/* A thread never seen in user mode is a kernel thread: no continuation. */
static void test_kernel_thread(void **state)
{
    struct fx *f = *state;
    tick(f, 0, kernel_at(f, 0));
    assert_int_equal(drain(f, 0), 1);
    assert_kernel_sample(&f->rec[0], thread_of(f, 0), PERIOD, 0);
    assert_int_equal(f->s->core.v[0].npend, 0);
}

/* A kernel unwinder that, like Linux ORC, reaches the frame where the thread entered the kernel:
 * the kernel chain at KSTACK, then the user registers saved there (entry_regs). */
static struct gw_regs entry_regs;

static unsigned entry_unwind(const struct gw_unwinder *u, struct gw_walker *w,
                             const struct gw_regs *r, struct gw_stack *st)
{
    (void)u;
    unsigned n = gw_unwind_regs(w, r, st);
    st->user_entry = true;
    st->user_regs = entry_regs;
    return n;
}

static const struct gw_unwinder entry_unwinder = {.name = "entry", .unwind = entry_unwind};

/* A kernel sample whose user stack is deferred but whose entry PC is known: that one frame and
 * the continuation. */
static void assert_entry_pc_deferred(const struct hvfxt_record *x, uint64_t cont)
{
    const struct hvfxt_sample_view *s = &x->u.sample;
    assert_int_equal(s->fields, HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU |
                                    HVFXT_SF_CPL | HVFXT_SF_PC | HVFXT_SF_WALK |
                                    HVFXT_SF_KERNEL_STACK | HVFXT_SF_USER_STACK |
                                    HVFXT_SF_CONTINUATION);
    assert_int_equal(s->continuation, cont);
    assert_int_equal(s->walk, hvfxt_walk_word(HVFXT_STOP_END, HVFXT_STOP_DEFERRED, 0, 0));
    assert_int_equal(s->user_stack.n, 1);
    assert_int_equal(fxtr_word(s->user_stack, 0), entry_regs.rip);
}

/* The user stack is walked at once from the entry frame's registers and written in the kernel
 * sample itself: no continuation, the user stop reason and caller method in the walk word, the
 * thread known as a user thread even at its first sample. */
static void test_user_stack_at_entry(void **state)
{
    struct fx *f = *state;
    f->s->os.kernel_unwinder = &entry_unwinder;
    entry_regs = (struct gw_regs){
        .rip = UCODE + 8, .rsp = USTACK + 0x80, .rbp = USTACK + 0x100, .user = true};
    tick(f, 0, kernel_at(f, FS_BASE0)); /* its first sample */
    assert_int_equal(f->s->core.v[0].npend, 0);
    assert_int_equal(drain(f, 0), 1);
    const struct hvfxt_sample_view *s = &f->rec[0].u.sample;
    assert_int_equal(s->fields, HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU |
                                    HVFXT_SF_CPL | HVFXT_SF_PC | HVFXT_SF_WALK |
                                    HVFXT_SF_KERNEL_STACK | HVFXT_SF_USER_STACK);
    assert_int_equal(s->continuation, 0);
    assert_int_equal(s->walk, hvfxt_walk_word(HVFXT_STOP_END, HVFXT_STOP_END, 0, 0));
    assert_stack(s->kernel_stack, KCODE + 8, kret);
    assert_stack(s->user_stack, UCODE + 8, uret);
    assert_int_equal(f->s->core.v[0].st.user_entry, 1);
    assert_int_equal(f->s->core.v[0].st.user_at_entry, 1);
    assert_true(id_thread_is_user(f->s->core.ids, thread_of(f, FS_BASE0)));

    /* A user stack page not present: the walk is left to the continuation, and the record
     * keeps the exact PC at entry as its one user frame. */
    entry_regs.rsp = USTACK + 0x10000;
    entry_regs.rbp = USTACK + 0x10000;
    tick(f, 0, kernel_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 1);
    assert_entry_pc_deferred(&f->rec[0], CONT(0, 1));
    assert_int_equal(f->s->core.v[0].st.user_entry, 2);
    assert_int_equal(f->s->core.v[0].st.user_at_entry, 1);

    /* Only the PC known (no stack pointer: Linux's system-call entry before its pt_regs): the
     * same, without trying a walk. */
    entry_regs.rsp = 0;
    tick(f, 0, kernel_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 1);
    assert_entry_pc_deferred(&f->rec[0], CONT(0, 1));
    assert_int_equal(f->s->core.v[0].st.user_entry, 3);
    assert_int_equal(f->s->core.v[0].st.user_at_entry, 1);
}

/* --defer-user-stacks: the RFC-0274 continuation even where the entry frame was reached. */
static void test_user_stack_deferred(void **state)
{
    struct fx *f = *state;
    f->s->os.kernel_unwinder = &entry_unwinder;
    f->s->core.cfg.defer_user_stacks = true;
    entry_regs = (struct gw_regs){
        .rip = UCODE + 8, .rsp = USTACK + 0x80, .rbp = USTACK + 0x100, .user = true};
    tick(f, 0, user_at(f, FS_BASE0));
    tick(f, 0, kernel_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 2);
    assert_entry_pc_deferred(&f->rec[1], CONT(0, 1));
    assert_int_equal(f->s->core.v[0].st.user_entry, 1);
    assert_int_equal(f->s->core.v[0].st.user_at_entry, 0);
}

/* Opened by a kernel tick, reused by the next, completed by the re-check that finds the thread
 * back in user mode: one completion closes both partial records. */
static void test_continuation_opened_reused_completed(void **state)
{
    struct fx *f = *state;
    tick(f, 0, user_at(f, FS_BASE0));
    uint64_t t1 = PERIOD;
    tick(f, 0, kernel_at(f, FS_BASE0));
    uint64_t t2 = f->now;
    tick(f, 0, kernel_at(f, FS_BASE0));
    uint64_t t3 = f->now;
    assert_int_equal(f->s->core.v[0].npend, 1);
    assert_int_equal(f->s->core.v[0].pend[0].samples, 2);
    recheck(f, 0, user_at(f, FS_BASE0));
    assert_int_equal(f->s->core.v[0].npend, 0);
    assert_int_equal(drain(f, 0), 4);
    assert_user_sample(&f->rec[0], proc_of(f), thread_of(f, FS_BASE0), t1, 0);
    assert_kernel_sample(&f->rec[1], thread_of(f, FS_BASE0), t2, CONT(0, 1));
    assert_kernel_sample(&f->rec[2], thread_of(f, FS_BASE0), t3, CONT(0, 1));
    assert_completion(&f->rec[3], CONT(0, 1), thread_of(f, FS_BASE0), 0, HVFXT_STOP_END);
    assert_int_equal(f->s->core.v[0].st.completed, 1);
    assert_int_equal(f->s->core.v[0].st.rechecks, 1);
    /* The next kernel tick opens a new continuation. */
    tick(f, 0, kernel_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 1);
    assert_kernel_sample(&f->rec[0], thread_of(f, FS_BASE0), f->now, CONT(0, 2));
}

/* The thread returns to user mode on the other vCPU: the completion is written there, and the
 * first vCPU forgets its local entry without abandoning anything. */
static void test_continuation_completed_elsewhere(void **state)
{
    struct fx *f = *state;
    tick(f, 0, user_at(f, FS_BASE0));
    tick(f, 0, kernel_at(f, FS_BASE0));
    tick(f, 1, user_at(f, FS_BASE0));
    assert_int_equal(drain(f, 1), 2);
    assert_completion(&f->rec[0], CONT(0, 1), thread_of(f, FS_BASE0), 1, HVFXT_STOP_END);
    assert_user_sample(&f->rec[1], proc_of(f), thread_of(f, FS_BASE0), f->now, 1);
    tick(f, 0, kernel_at(f, 0x1234000)); /* another (kernel) thread: expiry runs */
    assert_int_equal(f->s->core.v[0].npend, 0);
    assert_int_equal(drain(f, 0), 3); /* user, partial, the kernel thread's sample */
    assert_int_equal(f->s->core.v[0].st.abandoned, 0);
}

/* Still in the kernel after abandon_ticks (10 ticks at 1 kHz): abandoned with the reason, and
 * the next kernel tick of the thread opens a fresh continuation. */
static void test_continuation_abandoned_timeout(void **state)
{
    struct fx *f = *state;
    tick(f, 0, user_at(f, FS_BASE0));
    for (unsigned i = 0; i < 12; i++)
        tick(f, 0, kernel_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 1 + 12 + 1);
    for (unsigned i = 1; i <= 11; i++)
        assert_int_equal(f->rec[i].u.sample.continuation, CONT(0, 1));
    assert_completion(&f->rec[12], CONT(0, 1), thread_of(f, FS_BASE0), 0,
                      HVFXT_STOP_ABANDONED_TIMEOUT);
    assert_kernel_sample(&f->rec[13], thread_of(f, FS_BASE0), f->now, CONT(0, 2));
    assert_int_equal(f->s->core.v[0].st.abandoned_timeout, 1);
}

/* The session ends with the thread in the kernel. */
static void test_continuation_abandoned_end(void **state)
{
    struct fx *f = *state;
    tick(f, 0, user_at(f, FS_BASE0));
    tick(f, 0, kernel_at(f, FS_BASE0));
    exit_conts_end(&f->s->core.v[0], f->now + 5);
    assert_int_equal(drain(f, 0), 3);
    assert_completion(&f->rec[2], CONT(0, 1), thread_of(f, FS_BASE0), 0, HVFXT_STOP_ABANDONED_END);
    assert_int_equal(f->rec[2].u.sample.ts, f->now + 5);
    assert_int_equal(f->s->core.v[0].npend, 0);
}

/* More threads in the kernel than local slots: the oldest gives way. */
static void test_continuation_abandoned_full(void **state)
{
    struct fx *f = *state;
    for (unsigned t = 0; t <= EXIT_MAX_PENDING; t++)
        tick(f, 0, user_at(f, FS_BASE0 + 0x1000 * t));
    for (unsigned t = 0; t <= EXIT_MAX_PENDING; t++)
        tick(f, 0, kernel_at(f, FS_BASE0 + 0x1000 * t));
    unsigned n = drain(f, 0);
    assert_int_equal(n, 2 * (EXIT_MAX_PENDING + 1) + 1);
    /* The 9th thread's tick abandons the 1st thread's continuation, then samples. */
    assert_completion(&f->rec[n - 2], CONT(0, 1), thread_of(f, FS_BASE0), 0,
                      HVFXT_STOP_ABANDONED_FULL);
    assert_kernel_sample(&f->rec[n - 1], thread_of(f, FS_BASE0 + 0x1000 * EXIT_MAX_PENDING), f->now,
                         CONT(0, EXIT_MAX_PENDING + 1));
    assert_int_equal(f->s->core.v[0].st.abandoned_full, 1);
    assert_int_equal(f->s->core.v[0].npend, EXIT_MAX_PENDING);
}

/* Linux PTI: a process switches between the user PGD (kernel PGD + 4 KiB, with PCID bits) and
 * its kernel PGD. Both are one process, and a kernel stop on the user PGD walks the kernel
 * stack through the kernel PGD. */
static void test_pti_pair_identity(void **state)
{
    struct fx *f = *state;
    struct gimg *g = &f->g;
    uint64_t k2 = gimg_alloc_page(g);
    if (k2 & 0x1000)
        k2 = gimg_alloc_page(g);
    uint64_t u2 = gimg_alloc_page(g);
    assert_int_equal(u2, k2 + 0x1000);
    memcpy(gimg_host(g, k2), gimg_host(g, g->root), 4096);
    uint64_t *upgd = gimg_host(g, u2), *kp = gimg_host(g, k2);
    for (unsigned i = 0; i < 256; i++) /* the user PGD maps the lower half only */
        upgd[i] = kp[i];

    struct gw_snapshot u = user_at(f, FS_BASE0);
    u.cr3 = u2 | 0x801; /* PCID 1 plus the user-PCID bit 11 */
    u.cr4 |= PT_CR4_PCIDE;
    struct gw_snapshot k = kernel_at(f, FS_BASE0);
    k.cr3 = k2 | 1;
    k.cr4 |= PT_CR4_PCIDE;
    struct gw_snapshot k_on_user = kernel_at(f, FS_BASE0);
    k_on_user.cr3 = u.cr3;
    k_on_user.cr4 = u.cr4;
    tick(f, 0, u);
    tick(f, 0, k);
    tick(f, 0, k_on_user);
    assert_int_equal(drain(f, 0), 3);
    /* One process, keyed by the kernel PGD (the canonical root of the pair). */
    uint32_t proc = id_proc_get(f->s->core.ids, k2, NULL);
    uint32_t thread = id_thread_get(f->s->core.ids, proc, FS_BASE0, 0);
    assert_user_sample(&f->rec[0], proc, thread, PERIOD, 0);
    assert_kernel_sample(&f->rec[1], thread, 2 * PERIOD, CONT(0, 1));
    assert_kernel_sample(&f->rec[2], thread, 3 * PERIOD, CONT(0, 1));
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(f->rec[i].u.sample.pid, hvfxt_koid_guest_process(proc));
}

/* A halted vCPU in cpu mode is idle: counted, not recorded, and it opens no continuation. */
static void test_idle(void **state)
{
    struct fx *f = *state;
    tick(f, 0, user_at(f, FS_BASE0));
    struct gw_snapshot h = kernel_at(f, FS_BASE0);
    h.halted = true;
    tick(f, 0, h);
    assert_int_equal(drain(f, 0), 1);
    assert_int_equal(f->s->core.v[0].st.idle, 1);
    assert_int_equal(f->s->core.v[0].npend, 0);
    /* Without MP state (have = 0) the same stop is a kernel sample. */
    h.have = 0;
    tick(f, 0, h);
    assert_int_equal(drain(f, 0), 1);
    assert_kernel_sample(&f->rec[0], thread_of(f, FS_BASE0), f->now, CONT(0, 1));
}

/* A full ring drops samples and counts them; the next record that fits is preceded by one loss
 * record with the count and the time range. A missed period is counted too. */
static void test_drops(void **state)
{
    struct fx *f = *state;
    struct exit_vcpu *sv = &f->s->core.v[0];
    unsigned ticks = 0;
    uint64_t first_drop = 0;
    while (fxt_ring_dropped_total(&sv->ring) < 5) {
        uint64_t before = fxt_ring_dropped_total(&sv->ring);
        tick(f, 0, user_at(f, FS_BASE0));
        if (!first_drop && fxt_ring_dropped_total(&sv->ring) > before)
            first_drop = f->now;
        ticks++;
        assert_true(ticks < 10000);
    }
    uint64_t last_drop = f->now;
    assert_int_equal(sv->st.records, ticks - 5);
    assert_int_equal(drain(f, 0), ticks - 5);
    tick(f, 0, user_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 2);
    assert_int_equal(f->rec[0].kind, HVFXT_REC_LOSS);
    assert_int_equal(f->rec[0].u.loss.dropped, 5);
    assert_int_equal(f->rec[0].u.loss.vcpu, 0);
    assert_int_equal(f->rec[0].u.loss.first_ts, first_drop);
    assert_int_equal(f->rec[0].u.loss.last_ts, last_drop);
    assert_user_sample(&f->rec[1], proc_of(f), thread_of(f, FS_BASE0), f->now, 0);
    /* Three periods late: two missed, the third taken. */
    uint64_t late = sv->next_due_ns + 2 * PERIOD + 10;
    assert_int_equal(exit_tick(sv, late), EXIT_TICK_DUE);
    assert_int_equal(sv->st.missed, 2);
    assert_int_equal(sv->next_due_ns, late - 10 + PERIOD);
    /* And a re-check signal with nothing pending is ignored. */
    assert_int_equal(exit_tick(sv, late + 1), EXIT_TICK_NONE);
}

/* What the guest kernel says about each stop (a Linux layer's identify_task, as tests of
 * guestos/linux/ check it against task_structs in memory): set by the test before each tick. */
static struct guestos_task the_task;
static bool task_unreadable;

static void scripted_identify_task(const struct guestos *os, struct guestos_vcpu *vc,
                                   struct gw_walker *w, struct guestos_ident *out)
{
    (void)os, (void)vc, (void)w;
    out->task_unreadable = task_unreadable;
    if (task_unreadable)
        return;
    out->task = the_task;
    out->thread_key = (uint64_t)the_task.tid;
    if (the_task.kthread) {
        out->proc_key = GUESTOS_KEY_NOT_ROOT | (uint64_t)the_task.pid;
        out->as_root = 0;
    }
}

static struct guestos_task task_of(int32_t pid, int32_t tid, const char *comm, const char *process,
                                   bool kthread)
{
    struct guestos_task t = {.known = true, .kthread = kthread, .pid = pid, .tid = tid};
    snprintf(t.comm, sizeof(t.comm), "%s", comm);
    snprintf(t.process, sizeof(t.process), "%s", process);
    return t;
}

struct named {
    char name[32];
    int64_t guest_id; /* -1: no guest_pid / guest_tid argument */
    unsigned records;
};

/* The last kernel object record of each guest process and thread in the recording. */
static void read_names(struct fx *f, struct named *procs, struct named *threads)
{
    FILE *in = fopen(f->path, "rb");
    assert_non_null(in);
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof(buf), in);
    fclose(in);
    struct fxtr_reader rd;
    fxtr_init(&rd, buf, len);
    struct fxtr_record r;
    struct hv_err err;
    int rc;
    while ((rc = fxtr_next(&rd, &r, &err)) == 1) {
        if (r.type != FXTR_KOBJ)
            continue;
        struct named *n = NULL;
        if (hvfxt_koid_is_guest_process(r.u.kobj.koid))
            n = &procs[r.u.kobj.koid - HVFXT_KOID_PROCESS_BASE];
        else if (hvfxt_koid_is_guest_thread(r.u.kobj.koid))
            n = &threads[r.u.kobj.koid - HVFXT_KOID_THREAD_BASE];
        if (!n)
            continue;
        snprintf(n->name, sizeof(n->name), "%.*s", (int)r.u.kobj.name.len, r.u.kobj.name.ptr);
        n->guest_id = -1;
        n->records++;
        for (unsigned i = 0; i < r.u.kobj.nargs; i++)
            if (r.u.kobj.args[i].type == FXTR_ARG_I64)
                n->guest_id = r.u.kobj.args[i].v.i;
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    fxtr_free(&rd);
}

/* With an OS layer that reads the guest's tasks: threads are keyed by tid, a process is named
 * after its leader once seen (first after whichever thread came first), a kernel thread is its
 * own process with no address space, renames reach the recording as new kernel object records,
 * and stops whose task cannot be read keep the address-space identity and are counted. */
static void test_guest_tasks(void **state)
{
    struct fx *f = *state;
    struct guestos_ops ops = *f->s->os.ops;
    ops.identify_task = scripted_identify_task;
    f->s->os.ops = &ops;
    task_unreadable = false;

    the_task = task_of(812, 813, "worker-two", "", false);
    tick(f, 0, user_at(f, FS_BASE0));
    uint32_t proc = proc_of(f), worker = id_thread_get(f->s->core.ids, proc, 813, 0);
    struct id_label_value v;
    assert_true(id_label_get(id_thread_label(f->s->core.ids, worker), &v));
    assert_int_equal(v.guest_id, 813);
    assert_string_equal(v.comm, "worker-two");
    assert_true(id_label_get(id_proc_label(f->s->core.ids, proc), &v));
    assert_int_equal(v.guest_id, 812);
    assert_string_equal(v.comm, "worker-two"); /* the only thread seen so far */
    assert_int_equal(sampler_drain_once(f->s, false), 0);

    the_task = task_of(812, 813, "worker-two", "hv_threads", false); /* its leader's name */
    tick(f, 1, user_at(f, FS_BASE0 + 0x1000));
    assert_true(id_label_get(id_proc_label(f->s->core.ids, proc), &v));
    assert_string_equal(v.comm, "hv_threads");
    the_task = task_of(812, 813, "renamed", "hv_threads", false); /* prctl(PR_SET_NAME) */
    tick(f, 0, user_at(f, FS_BASE0));
    /* One thread for the guest's tid 813, whatever FS base the stops had. */
    assert_int_equal(id_thread_get(f->s->core.ids, proc, 813, 0), worker);

    the_task = task_of(45, 45, "kworker/1:2", "kworker/1:2", true);
    tick(f, 0, kernel_at(f, FS_BASE0));
    uint32_t kproc = id_proc_get(f->s->core.ids, GUESTOS_KEY_NOT_ROOT | 45, NULL);
    assert_int_not_equal(kproc, proc);
    assert_int_equal(id_proc_at(f->s->core.ids, kproc)->info.cr3, 0);
    assert_int_equal(f->s->core.v[0].npend, 0); /* a kernel thread opens no continuation */

    task_unreadable = true;
    tick(f, 1, user_at(f, FS_BASE0 + 0x2000));
    assert_int_equal(f->s->core.v[1].st.task_unknown, 1);
    assert_int_equal(id_thread_get(f->s->core.ids, proc, FS_BASE0 + 0x2000, 0) != 0, 1);

    assert_int_equal(sampler_drain_once(f->s, true), 0);
    struct hv_err err;
    assert_int_equal(fxt_writer_close(&f->s->w, &err), 0);
    f->s->writer_open = false;
    static struct named procs[ID_MAX_PROCS + 1], threads[ID_MAX_THREADS + 1];
    memset(procs, 0, sizeof(procs));
    memset(threads, 0, sizeof(threads));
    read_names(f, procs, threads);
    assert_string_equal(procs[proc].name, "hv_threads");
    assert_int_equal(procs[proc].guest_id, 812);
    assert_int_equal(procs[proc].records, 2); /* "worker-two", then the leader's name */
    assert_string_equal(threads[worker].name, "renamed");
    assert_int_equal(threads[worker].guest_id, 813);
    assert_int_equal(threads[worker].records, 2);
    assert_string_equal(procs[kproc].name, "kworker/1:2");
    assert_int_equal(procs[kproc].guest_id, 45);
    uint32_t anon = id_thread_get(f->s->core.ids, proc, FS_BASE0 + 0x2000, 0);
    assert_int_equal(threads[anon].guest_id, -1); /* the generic name, no guest tid */
    assert_non_null(strstr(threads[anon].name, "fs=0x"));
    f->s->os.ops = &guestos_generic_ops;
}

/* The recording's samples, joined with their completions (schema/join.h, as every reader
 * joins them), each as its frames leaf first: the pc, the kernel stack, the user stack (the
 * walk arrays' first entry, the pc again, dropped). Read with schema/decode.h: the recorder's
 * tests read what it wrote without the report library. */
struct rec_sample {
    uint8_t cpl;
    uint32_t n;
    uint64_t addr[2 * EXIT_MAX_FRAMES + 1];
};
struct rec_samples {
    size_t n;
    struct rec_sample v[64];
};

static int collect(void *ctx, const struct hvfxt_join_sample *js, const uint64_t *addr,
                   const uint32_t *flags, uint32_t n, struct hv_err *err)
{
    (void)flags, (void)err;
    struct rec_samples *out = ctx;
    assert_true(out->n < 64);
    struct rec_sample *r = &out->v[out->n++];
    r->cpl = js->cpl;
    r->n = 0;
    for (uint32_t i = 0; i < js->n; i++)
        r->addr[r->n++] = js->addr[i];
    /* The join dropped the completion's first frame where the sample has its exact user pc. */
    for (uint32_t i = 0; i < n; i++)
        r->addr[r->n++] = addr[i];
    return 0;
}

static void load_recording(struct fx *f, struct rec_samples *out)
{
    struct hv_err err = {0};
    assert_int_equal(fxt_writer_close(&f->s->w, &err), 0);
    f->s->writer_open = false;
    const void *buf;
    size_t len;
    if (fxtr_map_file(f->path, &buf, &len, &err) < 0)
        fail_msg("%s", err.msg);
    struct hvfxt_join j;
    out->n = 0;
    assert_int_equal(hvfxt_join_init(&j, collect, out, &err), 0);
    struct fxtr_reader r;
    fxtr_init(&r, buf, len);
    struct hvfxt_record *x = malloc(sizeof(*x));
    static uint64_t addr[2 * EXIT_MAX_FRAMES + 1];
    static uint32_t flags[2 * EXIT_MAX_FRAMES + 1];
    int rc;
    while ((rc = hvfxt_next(&r, x, &err)) == 1) {
        if (x->kind != HVFXT_REC_SAMPLE)
            continue;
        const struct hvfxt_sample_view *v = &x->u.sample;
        uint32_t n = 0;
        if (v->fields & HVFXT_SF_PC)
            addr[n++] = v->pc;
        for (uint32_t i = 0; (v->fields & HVFXT_SF_KERNEL_STACK) && i < v->kernel_stack.n; i++)
            if (i || !(v->fields & HVFXT_SF_PC) || fxtr_word(v->kernel_stack, 0) != v->pc)
                addr[n++] = fxtr_word(v->kernel_stack, i);
        uint32_t user_from = n;
        for (uint32_t i = 0; (v->fields & HVFXT_SF_USER_STACK) && i < v->user_stack.n; i++)
            if (i || v->cpl == 0 || !(v->fields & HVFXT_SF_PC) ||
                fxtr_word(v->user_stack, 0) != v->pc)
                addr[n++] = fxtr_word(v->user_stack, i);
        if (v->fields & HVFXT_SF_CONTINUATION_COMPLETION) {
            assert_int_equal(hvfxt_join_complete(&j, v->completion, addr, flags, n, &err), 0);
            continue;
        }
        struct hvfxt_join_sample js = {.ts = v->ts,
                                       .pid = v->pid,
                                       .tid = v->tid,
                                       .vcpu = (uint32_t)v->vcpu,
                                       .cpl = (uint8_t)v->cpl,
                                       .addr = addr,
                                       .flags = flags,
                                       .n = n,
                                       .entry_pc = n > user_from || (v->cpl && n > 0)};
        if (v->fields & HVFXT_SF_CONTINUATION)
            assert_int_equal(hvfxt_join_partial(&j, v->continuation, &js, &err), 0);
        else
            assert_int_equal(collect(out, &js, NULL, NULL, 0, &err), 0);
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(hvfxt_join_flush(&j, &err), 0);
    hvfxt_join_free(&j);
    free(x);
    fxtr_free(&r);
    fxtr_unmap_file(buf, len);
}

/* Sample i's frames, leaf first. */
static void assert_rec_stack(const struct rec_samples *p, size_t i, const uint64_t *want,
                             unsigned n)
{
    assert_true(i < p->n);
    assert_int_equal(p->v[i].n, n);
    for (unsigned k = 0; k < n; k++)
        assert_int_equal(p->v[i].addr[k], want[k]);
}

/* A user walk that met code without tables (here: no map at all) is copied: the sample has its
 * exact PC and a continuation; the drain thread walks the copy and completes it. The guest's
 * stack is wiped before that walk, so the frames can only come from the copy. */
static void test_copied_user_stack(void **state)
{
    struct fx *f = *state;
    tick(f, 0, user_at(f, FS_BASE0));
    assert_int_equal(f->s->core.v[0].st.copies, 1);
    assert_int_equal(f->s->core.v[0].st.completed, 1); /* its completion: one record */
    struct exit_stack_copy *c = &f->s->core.v[0].copies.slot[0];
    assert_int_equal(c->regs.rsp, USTACK + 0x80);
    assert_int_equal(c->len, 0x4000 - 0x80); /* to the end of the mapped stack */
    assert_int_equal(c->id, CONT(0, 1));
    static const uint8_t zero[0x4000];
    assert_int_equal(gimg_write(&f->g, USTACK, zero, sizeof(zero)), 0);
    assert_int_equal(sampler_drain_once(f->s, true), 0);
    assert_int_equal(f->s->core.v[0].copies.head, 1);

    static struct rec_samples p;
    load_recording(f, &p);
    assert_int_equal(p.n, 1);
    const uint64_t want[NFRAMES] = {UCODE + 8, uret[0], uret[1], uret[2]};
    assert_rec_stack(&p, 0, want, NFRAMES);
    assert_int_equal(p.v[0].cpl, 3);
}

/* A kernel sample whose user stack was walked at entry but met code without tables: the entry
 * PC now, the callers from the copy. */
static void test_copied_entry_stack(void **state)
{
    struct fx *f = *state;
    f->s->os.kernel_unwinder = &entry_unwinder;
    entry_regs = (struct gw_regs){
        .rip = UCODE + 8, .rsp = USTACK + 0x80, .rbp = USTACK + 0x100, .user = true};
    tick(f, 0, kernel_at(f, FS_BASE0));
    assert_int_equal(f->s->core.v[0].st.copies, 1);
    assert_int_equal(f->s->core.v[0].st.user_at_entry, 1);
    static const uint8_t zero[0x4000];
    assert_int_equal(gimg_write(&f->g, USTACK, zero, sizeof(zero)), 0);
    assert_int_equal(sampler_drain_once(f->s, true), 0);
    static struct rec_samples p;
    load_recording(f, &p);
    assert_int_equal(p.n, 1);
    const uint64_t want[2 * NFRAMES] = {KCODE + 8, kret[0], kret[1], kret[2],
                                        UCODE + 8, uret[0], uret[1], uret[2]};
    assert_rec_stack(&p, 0, want, 2 * NFRAMES);
}

/* Copies that gain nothing over the walk at the exit (no tables ever come) stop after 16 in a
 * row: the process's next samples are written whole at the exit. */
static void test_copies_stop_when_fruitless(void **state)
{
    struct fx *f = *state;
    for (unsigned i = 0; i < 20; i++) {
        tick(f, 0, user_at(f, FS_BASE0));
        assert_int_equal(sampler_drain_once(f->s, false), 0);
    }
    assert_int_equal(f->s->core.v[0].st.copies, 16);
    assert_int_equal(f->s->core.v[0].st.completed, 16);
    char summary[1024] = "";
    source_summary(f->s, "copied-stacks", summary, sizeof(summary));
    assert_non_null(strstr(summary, "stacks copied at the exit for code without unwind tables "
                                    "yet: 16, walked later 16 (0 with more frames"));
    assert_non_null(strstr(summary, "1 processes no longer copied"));
    static struct rec_samples p;
    load_recording(f, &p);
    assert_int_equal(p.n, 20);
    const uint64_t want[NFRAMES] = {UCODE + 8, uret[0], uret[1], uret[2]};
    for (size_t i = 0; i < p.n; i++)
        assert_rec_stack(&p, i, want, NFRAMES);
}

/* A copy's wait ends at the first look at its process that began after it (that look found
 * all the code the copy can meet), not 2 s later; a copy taken after that look waits for the
 * next. The clock here is the drain thread's own (hv_now_ns), as in a recording. */
static void test_copy_done_at_next_look(void **state)
{
    struct fx *f = *state;
    struct exit_vcpu *sv = &f->s->core.v[0];
    sv->next_due_ns = hv_now_ns();
    tick(f, 0, user_at(f, FS_BASE0));
    assert_int_equal(sv->st.copies, 1);
    uint32_t proc = sv->copies.slot[0].proc;
    /* The drain's first pass looks at the new process (after the copy): the copy is done. */
    assert_int_equal(sampler_drain_once(f->s, false), 0);
    assert_true(f->s->looked[proc - 1] > f->now);
    assert_int_equal(sv->copies.head, 1);

    sv->next_due_ns = hv_now_ns();
    tick(f, 0, user_at(f, FS_BASE0));
    assert_int_equal(sv->st.copies, 2);
    /* No look since (the next comes 0.1 s after the first at the earliest): it waits. */
    assert_int_equal(sampler_drain_once(f->s, false), 0);
    assert_true(f->s->looked[proc - 1] < f->now);
    assert_int_equal(sv->copies.head, 1);
    assert_int_equal(sampler_drain_once(f->s, true), 0); /* the end: written as it is */
    assert_int_equal(sv->copies.head, 2);

    char summary[1024] = "";
    source_summary(f->s, "copied-stacks", summary, sizeof(summary));
    assert_non_null(strstr(summary, "yet: 2, walked later 2 (0 with more frames than at the exit; "
                                    "1 still short after a look at their process, 0 after the 2 "
                                    "s wait)"));
    static struct rec_samples p;
    load_recording(f, &p);
    assert_int_equal(p.n, 2);
    const uint64_t want[NFRAMES] = {UCODE + 8, uret[0], uret[1], uret[2]};
    for (size_t i = 0; i < p.n; i++)
        assert_rec_stack(&p, i, want, NFRAMES);
}

/* Exit events' stacks (exit_stacks_due): every Nth with --exit-stacks-every N; by default
 * while the walks took at most a twentieth of the time: 10 ms of walks at first, then the
 * twentieth of the time between exits. Exits 100 us apart whose walks take 20 us each: the
 * first 10 ms pay for ~500 walks (each earns 5 us of the 20 it costs), then one in four. */
static void test_exit_stacks_budget(void **state)
{
    struct fx *f = *state;
    struct exit_core *core = &f->s->core;
    struct exit_vcpu *sv = &core->v[0];
    core->cfg.exit_every = 3;
    unsigned walked = 0;
    for (unsigned i = 1; i <= 30; i++)
        walked += exit_stacks_due(core, sv, 1000 + i);
    assert_int_equal(walked, 10);

    core->cfg.exit_every = 0;
    sv->exit_seq = 0;
    uint64_t now = 1000000000ull;
    unsigned first = 0, later = 0;
    for (unsigned i = 0; i < 4000; i++, now += 100000) {
        if (!exit_stacks_due(core, sv, now))
            continue;
        sv->exit_budget_ns -= 20000;
        first += i < 2000;
        later += i >= 2000;
    }
    /* 10 ms / (20 - 5) us = 666.7: walks 0..666 (the last one overdraws), then the debt paid. */
    assert_int_equal(first, 667 + (2000 - 667) / 4);
    assert_int_equal(later, 2000 / 4);
    /* A quiet spell refills at most the 10 ms, not the twentieth of all of it. */
    now += 3600ull * 1000000000ull;
    assert_true(exit_stacks_due(core, sv, now));
    assert_int_equal(sv->exit_budget_ns, 10000000);
}

/* More live processes than the table's slots: the sample goes to the unattributed identity,
 * which the drain thread names once, and the summary counts; never to address space 0 (the
 * kernel's), where such samples went before. */
static void test_table_full_unattributed(void **state)
{
    struct fx *f = *state;
    struct id_proc_info info = {0};
    /* Every slot taken (a lookup fails once its probe neighbourhood is full: keep going until
     * all ID_MAX_PROCS are). */
    unsigned taken = 0;
    for (uint64_t k = 1; taken < ID_MAX_PROCS; k++) {
        assert_true(k < 100 * ID_MAX_PROCS);
        taken += id_proc_get(f->s->core.ids, 0x100000000ull + (k << 12), &info) != 0;
    }
    tick(f, 0, user_at(f, FS_BASE0));
    assert_int_equal(drain(f, 0), 1);
    const struct hvfxt_sample_view *v = &f->rec[0].u.sample;
    assert_int_equal(v->pid, HVFXT_KOID_UNATTRIBUTED_PROCESS);
    assert_int_equal(v->tid, HVFXT_KOID_UNATTRIBUTED_THREAD);
    assert_int_equal(f->s->core.v[0].st.unattributed, 1);
    assert_true(atomic_load(&f->s->core.ids->full) > 0);
    /* The drain pass names it; the summary says how many stops went there, and why. */
    assert_int_equal(sampler_drain_once(f->s, false), 0);
    assert_true(f->s->unattributed_named);
    char summary[8192] = "";
    FILE *mem = fmemopen(summary, sizeof(summary), "w");
    sampler_print_summary(f->s, mem, false);
    fclose(mem);
    assert_non_null(strstr(summary, "1 stops under the identity [unattributed: table full] "
                                    "(more live processes or threads than the tables' 1024 "
                                    "and 8192 slots)"));
}

/* A source that fails stops the recording like a write error, and its error names it: the
 * kind stays (out of memory is not "cannot write"), the file's name only for a write error. */
static int failing_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                        bool final, struct hv_err *err)
{
    (void)st, (void)env, (void)stage, (void)now, (void) final;
    return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
}

static void test_source_failure_named(void **state)
{
    struct fx *f = *state;
    static const struct rec_source_ops failing = {
        .name = "failing",
        .stages = REC_STAGE_BIT(REC_STAGE_GUEST),
        .poll = failing_poll,
    };
    assert_true(f->s->nsrc < SAMPLER_MAX_SOURCES);
    f->s->src[f->s->nsrc++] = (struct sampler_source){.ops = &failing};
    assert_int_equal(sampler_drain_once(f->s, false), -1);
    assert_string_equal(f->s->write_err.msg, "recorder source failing: out of memory");
    assert_int_equal(hv_err_kind(&f->s->write_err), HV_ERR_NO_MEMORY);
    assert_int_equal(sampler_drain_once(f->s, false), -1); /* stopped for good */
    f->s->nsrc--;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_user_sample, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_opened_reused_completed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_completed_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_abandoned_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_abandoned_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_abandoned_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pti_pair_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_stack_at_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_stack_deferred, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drops, setup_small_ring, teardown),
        cmocka_unit_test_setup_teardown(test_guest_tasks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copied_user_stack, setup_copies, teardown),
        cmocka_unit_test_setup_teardown(test_copy_done_at_next_look, setup_copies, teardown),
        cmocka_unit_test_setup_teardown(test_exit_stacks_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copied_entry_stack, setup_copies, teardown),
        cmocka_unit_test_setup_teardown(test_copies_stop_when_fruitless, setup_copies, teardown),
        cmocka_unit_test_setup_teardown(test_source_failure_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_full_unattributed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
