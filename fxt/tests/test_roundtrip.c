/* Writer -> file -> independent reader, over randomized records: samples (partial and
 * completion, random fields and stacks) and events with random arguments through per-vCPU rings
 * and interning; kernel objects, markers, modules and mappings on provider 0. Every record read
 * back must equal what was written, per provider and in order; the file must satisfy the strict
 * reader's provider/section/initialization rules. Also: the interning index limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fxt/encode.h"
#include "fxt/intern.h"
#include "fxt/reader.h"
#include "fxt/ring.h"
#include "fxt/writer.h"

#define NVCPU    3
#define MAXREC   3000
#define MAXFRAME 300

static uint64_t rs;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* What a vCPU wrote, kept for comparison. */
struct want {
    int kind; /* 1 sample, 2 event */
    uint64_t fields, vals[11];
    uint64_t ustack[MAXFRAME], kstack[MAXFRAME];
    uint32_t nu, nk;
    char name[32];
    unsigned nargs;
    struct fxt_arg args[FXT_MAX_ARGS];
    char argnames[FXT_MAX_ARGS][16], argstrs[FXT_MAX_ARGS][16];
};

static struct want wants[NVCPU][MAXREC];
static unsigned nwant[NVCPU], seen[NVCPU];

static const char *const names[] = {"alpha", "beta", "gamma", "delta", "a-much-longer-name-x"};

static void gen_sample(struct want *w)
{
    w->kind = 1;
    w->fields = rnd() & 0x7ff;
    for (int i = 0; i < 11; i++)
        w->vals[i] = rnd();
    w->nu = (uint32_t)(rnd() % MAXFRAME);
    w->nk = (uint32_t)(rnd() % 40);
    for (uint32_t i = 0; i < w->nu; i++)
        w->ustack[i] = rnd();
    for (uint32_t i = 0; i < w->nk; i++)
        w->kstack[i] = rnd();
}

static void gen_event(struct want *w)
{
    w->kind = 2;
    snprintf(w->name, sizeof(w->name), "%s", names[rnd() % 5]);
    w->vals[0] = rnd(); /* ts */
    w->nargs = (unsigned)(rnd() % 16);
    for (unsigned i = 0; i < w->nargs; i++) {
        struct fxt_arg *a = &w->args[i];
        memset(a, 0, sizeof(*a));
        a->type = (enum fxt_arg_type)(rnd() % 10);
        snprintf(w->argnames[i], 16, "arg%u", (unsigned)(rnd() % 20));
        switch (a->type) {
        case FXT_ARG_I32:
            a->v.i32 = (int32_t)rnd();
            break;
        case FXT_ARG_U32:
            a->v.u32 = (uint32_t)rnd();
            break;
        case FXT_ARG_BOOL:
            a->v.b = rnd() & 1;
            break;
        case FXT_ARG_STRING:
            snprintf(w->argstrs[i], 16, "v%llu", (unsigned long long)(rnd() % 1000));
            break;
        default:
            a->v.u64 = rnd();
        }
    }
}

/* Encode into the ring, as the vCPU thread would. */
static void produce(struct fxt_ring *r, struct fxt_intern *in, struct want *w)
{
    uint64_t scratch[64];
    size_t nw;
    if (w->kind == 1) {
        struct fxt_sample s = {.fields = (uint32_t)w->fields,
                               .continuation = w->vals[0],
                               .completion = w->vals[1],
                               .pid = w->vals[2],
                               .tid = w->vals[3],
                               .ts = w->vals[4],
                               .user_stack = w->ustack,
                               .n_user = w->nu,
                               .vcpu = (uint32_t)w->vals[6],
                               .cpl = (uint8_t)w->vals[7],
                               .pc = w->vals[8],
                               .kernel_stack = w->kstack,
                               .n_kernel = w->nk,
                               .walk = w->vals[10]};
        w->vals[6] = (uint32_t)w->vals[6];
        w->vals[7] = (uint8_t)w->vals[7];
        uint32_t n = (uint32_t)fxt_sample_words(&s);
        uint64_t *p = fxt_ring_reserve(r, n, 0);
        assert_non_null(p);
        assert_int_equal(fxt_enc_sample(p, n, &s), n);
        fxt_ring_commit(r, n);
        return;
    }
    /* Strings and the thread go through the vCPU's intern table; new ones are emitted first. */
    struct fxt_event ev = {.type = FXT_EV_INSTANT, .ts = w->vals[0]};
    uint64_t *p = fxt_ring_reserve(r, 2048, 0);
    assert_non_null(p);
    size_t k = 0;
    ev.thread = fxt_intern_thread(in, 1, 0x1000 + rnd() % 300, p + k, 2048 - k, &nw);
    k += nw;
    ev.category = fxt_intern_str(in, "cat", 3, p + k, 2048 - k, &nw);
    k += nw;
    ev.name = fxt_intern_str(in, w->name, strlen(w->name), p + k, 2048 - k, &nw);
    k += nw;
    for (unsigned i = 0; i < w->nargs; i++) {
        w->args[i].name =
            fxt_intern_str(in, w->argnames[i], strlen(w->argnames[i]), p + k, 2048 - k, &nw);
        k += nw;
        if (w->args[i].type == FXT_ARG_STRING)
            w->args[i].v.str = fxt_str_inline(w->argstrs[i]);
    }
    ev.args = w->args;
    ev.nargs = w->nargs;
    size_t e = fxt_enc_event(p + k, 2048 - k, &ev);
    assert_true(e > 0);
    fxt_ring_commit(r, (uint32_t)(k + e));
    (void)scratch;
}

static bool sv(struct fxtr_string s, const char *lit)
{
    return s.len == strlen(lit) && !memcmp(s.ptr, lit, s.len);
}

static void check_sample(const struct want *w, const struct fxtr_sample *s)
{
    assert_int_equal(s->fields, w->fields);
    const uint64_t got[11] = {s->continuation, s->completion, s->pid, s->tid, s->ts,  0,
                              s->vcpu,         s->cpl,        s->pc,  0,      s->walk};
    for (int i = 0; i < 11; i++)
        if (i != 5 && i != 9)
            assert_true(got[i] == ((w->fields >> i) & 1 ? w->vals[i] : 0));
    assert_int_equal(s->user_stack.n, (w->fields & HVFXT_SF_USER_STACK) ? w->nu : 0);
    assert_int_equal(s->kernel_stack.n, (w->fields & HVFXT_SF_KERNEL_STACK) ? w->nk : 0);
    for (uint32_t i = 0; i < s->user_stack.n; i++)
        assert_true(fxtr_word(s->user_stack, i) == w->ustack[i]);
    for (uint32_t i = 0; i < s->kernel_stack.n; i++)
        assert_true(fxtr_word(s->kernel_stack, i) == w->kstack[i]);
}

static void check_event(const struct want *w, const struct fxtr_record *x)
{
    assert_true(x->u.event.ts == w->vals[0]);
    assert_true(sv(x->u.event.name, w->name) && sv(x->u.event.category, "cat"));
    assert_true(x->u.event.pid == 1 && x->u.event.tid >= 0x1000 && x->u.event.tid < 0x1000 + 300);
    assert_int_equal(x->u.event.nargs, w->nargs);
    for (unsigned i = 0; i < w->nargs; i++) {
        const struct fxtr_arg *a = &x->u.event.args[i];
        const struct fxt_arg *e = &w->args[i];
        assert_int_equal(a->type, e->type);
        assert_true(sv(a->name, w->argnames[i]));
        switch (e->type) {
        case FXT_ARG_NULL:
            break;
        case FXT_ARG_I32:
            assert_true(a->v.i == e->v.i32);
            break;
        case FXT_ARG_U32:
            assert_true(a->v.u == e->v.u32);
            break;
        case FXT_ARG_BOOL:
            assert_true(a->v.u == (uint64_t)e->v.b);
            break;
        case FXT_ARG_STRING:
            assert_true(sv(a->v.s, w->argstrs[i]));
            break;
        default:
            assert_true(a->v.u == e->v.u64);
        }
    }
}

static void roundtrip(uint64_t seed)
{
    rs = seed;
    char path[] = "/tmp/hvprof-fxt-rt-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct hv_err err = {0};
    struct fxt_writer w;
    if (fxt_writer_open(&w, path, 1000000000, NVCPU, "test-vm", &err))
        fail_msg("%s", err.msg);
    static struct fxt_ring rings[NVCPU];
    static struct fxt_intern interns[NVCPU];
    for (int v = 0; v < NVCPU; v++) {
        assert_int_equal(fxt_ring_init(&rings[v], 1 << 16, (uint32_t)v, 1, 0x1000 + v, &err), 0);
        assert_int_equal(fxt_intern_init(&interns[v], 16, 100, 4096, &err), 0);
        nwant[v] = seen[v] = 0;
    }
    uint8_t bid[20] = {1, 2, 3};
    struct fxt_module mod = {
        .id = 9, .name = "vmlinux", .name_len = 7, .build_id = bid, .build_id_len = 20};
    struct fxt_mapping map = {.pid = 0x10000000,
                              .module_id = 9,
                              .start = 0xffffffff81000000ull,
                              .size = 1 << 24,
                              .vaddr = 0x1000000,
                              .flags = 5,
                              .ts = 3};
    struct fxt_arg setting = {
        .type = FXT_ARG_U64, .name = fxt_str_inline("period_ns"), .v.u64 = 1000000};
    assert_int_equal(fxt_writer_marker(&w, HVFXT_SESSION_START, 1, &setting, 1, &err), 0);
    assert_int_equal(fxt_writer_guest_process(&w, hvfxt_koid_guest_process(0), "kernel", &err), 0);
    assert_int_equal(fxt_writer_guest_thread(&w, hvfxt_koid_guest_thread(5), "init",
                                             hvfxt_koid_guest_process(0), &err),
                     0);
    assert_int_equal(fxt_writer_module(&w, &mod, &err), 0);
    assert_int_equal(fxt_writer_mapping(&w, &map, &err), 0);
    for (int i = 0; i < NVCPU * MAXREC; i++) {
        int v = (int)(rnd() % NVCPU);
        if (nwant[v] == MAXREC)
            continue;
        struct want *x = &wants[v][nwant[v]++];
        if (rnd() % 2)
            gen_sample(x);
        else
            gen_event(x);
        produce(&rings[v], &interns[v], x);
        if (rnd() % 50 == 0)
            assert_true(fxt_writer_drain_ring(&w, (uint32_t)v, &rings[v], false, &err) >= 0);
    }
    for (int v = 0; v < NVCPU; v++)
        assert_true(fxt_writer_drain_ring(&w, (uint32_t)v, &rings[v], true, &err) >= 0);
    assert_int_equal(fxt_writer_marker(&w, HVFXT_SESSION_STOP, 2, NULL, 0, &err), 0);
    assert_int_equal(fxt_writer_close(&w, &err), 0);

    const void *buf;
    size_t len;
    assert_int_equal(fxtr_map_file(path, &buf, &len, &err), 0);
    struct fxtr_reader r;
    static struct fxtr_record x;
    fxtr_init(&r, buf, len);
    int rc, control = 0;
    while ((rc = fxtr_next(&r, &x, &err)) == 1) {
        assert_false(x.unknown);
        if (x.type == FXTR_METADATA || x.type == FXTR_INIT || x.type == FXTR_STRING ||
            x.type == FXTR_THREAD)
            continue;
        if (x.provider == 0) {
            if (x.type == FXTR_BLOB && x.u.blob.btype == HVFXT_BLOB_MODULE) {
                assert_true(x.u.blob.module.id == 9 && sv(x.u.blob.module.name, "vmlinux"));
                assert_int_equal(x.u.blob.module.build_id_len, 20);
                assert_memory_equal(x.u.blob.module.build_id, bid, 20);
                control |= 1;
            } else if (x.type == FXTR_BLOB && x.u.blob.btype == HVFXT_BLOB_MAPPING) {
                assert_memory_equal(&x.u.blob.mapping, &map, sizeof(map));
                control |= 2;
            } else if (x.type == FXTR_EVENT && sv(x.u.event.name, HVFXT_SESSION_START)) {
                assert_true(x.u.event.nargs == 1 && x.u.event.args[0].v.u == 1000000);
                assert_true(x.u.event.tid == HVFXT_KOID_CONTROL);
                control |= 4;
            } else if (x.type == FXTR_KOBJ && sv(x.u.kobj.name, "init")) {
                assert_true(x.u.kobj.koid == 0x40000005 && x.u.kobj.args[0].type == 8 &&
                            x.u.kobj.args[0].v.u == 0x10000000);
                control |= 8;
            } else if (x.type == FXTR_KOBJ && sv(x.u.kobj.name, "vcpu 2")) {
                assert_true(x.u.kobj.koid == 0x1002 && x.u.kobj.args[0].v.u == 1);
                control |= 16;
            }
            continue;
        }
        assert_true(x.provider >= 1 && x.provider <= NVCPU);
        assert_true(x.ticks_per_second == 1000000000);
        unsigned v = x.provider - 1;
        assert_true(seen[v] < nwant[v]);
        const struct want *e = &wants[v][seen[v]++];
        if (e->kind == 1) {
            assert_true(x.type == FXTR_BLOB && x.u.blob.btype == HVFXT_BLOB_SAMPLE);
            check_sample(e, &x.u.blob.sample);
        } else {
            assert_int_equal(x.type, FXTR_EVENT);
            check_event(e, &x);
        }
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(r.off, len);
    assert_int_equal(control, 31);
    for (int v = 0; v < NVCPU; v++) {
        assert_int_equal(seen[v], nwant[v]);
        assert_int_equal(fxt_ring_dropped_total(&rings[v]), 0);
        fxt_ring_destroy(&rings[v]);
        fxt_intern_destroy(&interns[v]);
    }
    fxtr_free(&r);
    fxtr_unmap_file(buf, len);
    unlink(path);
}

static void test_roundtrip_seeds(void **state)
{
    for (uint64_t seed = 1; seed <= 5; seed++)
        roundtrip(seed * 0x9e3779b97f4a7c15ull);
}

static void test_intern_limits(void **state)
{
    static struct fxt_intern in;
    static uint64_t file[1 << 20];
    struct hv_err err;
    assert_int_equal(fxt_intern_init(&in, 0x8000, 10, 1, &err), -1);
    assert_int_equal(fxt_intern_init(&in, 10, 0x100, 1, &err), -1);
    assert_int_equal(fxt_intern_init(&in, 0x7fff, 0xff, 1 << 20, &err), 0);
    size_t n = fxt_enc_magic(file, 8);
    n += fxt_enc_provider_info(file + n, 8, 0, "p", 1);
    n += fxt_enc_provider_section(file + n, 8, 0);
    n += fxt_enc_init(file + n, 8, 1000);
    char s[16];
    size_t nw;
    for (unsigned i = 0; i <= 0x7fff; i++) {
        int len = snprintf(s, sizeof(s), "s%u", i);
        struct fxt_str ref = fxt_intern_str(&in, s, (size_t)len, file + n, 16, &nw);
        n += nw;
        if (i < 0x7fff) {
            assert_int_equal(ref.index, i + 1);
            assert_true(nw > 0);
        } else { /* index space exhausted: inline, nothing written */
            assert_int_equal(ref.index, 0);
            assert_int_equal(ref.len, len);
            assert_int_equal(nw, 0);
        }
        /* the same string again: same reference, nothing written */
        struct fxt_str again = fxt_intern_str(&in, s, (size_t)len, file + n, 16, &nw);
        assert_int_equal(nw, 0);
        assert_int_equal(again.index, ref.index);
        struct fxt_event ev = {
            .type = FXT_EV_INSTANT, .ts = i, .thread = {.pid = 1, .tid = 2}, .name = ref};
        n += fxt_enc_event(file + n, 16, &ev);
    }
    for (unsigned i = 0; i <= 0xff; i++) {
        struct fxt_thread t = fxt_intern_thread(&in, 7, 100 + i, file + n, 16, &nw);
        n += nw;
        assert_int_equal(t.index, i < 0xff ? i + 1 : 0);
        struct fxt_event ev = {
            .type = FXT_EV_INSTANT, .ts = i, .thread = t, .name = fxt_str_index(1)};
        n += fxt_enc_event(file + n, 16, &ev);
    }
    fxt_intern_destroy(&in);
    /* The reader accepts it all and resolves the last interned string and thread. */
    struct fxtr_reader r;
    static struct fxtr_record x;
    fxtr_init(&r, file, 8 * n);
    int rc;
    uint64_t events = 0;
    while ((rc = fxtr_next(&r, &x, &err)) == 1) {
        if (x.type != FXTR_EVENT)
            continue;
        if (events == 0x7ffe)
            assert_true(sv(x.u.event.name, "s32766"));
        if (events == 0x7fff)
            assert_true(sv(x.u.event.name, "s32767"));
        if (events >= 0x8000) /* interned (index 1..0xff), then the inline one */
            assert_true(x.u.event.pid == 7 && x.u.event.tid == 100 + (events - 0x8000));
        events++;
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(events, 0x8000 + 0x100);
    fxtr_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_seeds),
        cmocka_unit_test(test_intern_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
