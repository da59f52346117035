/* A whole recording through writer -> file -> independent reader, over randomized records:
 * samples (partial and completion, random fields and stacks) and events with random arguments
 * through per-vCPU rings and interning; kernel objects, markers, modules and mappings on the
 * control provider. Every record read back must equal what was written, per provider and in
 * order; the file must satisfy the strict reader's provider/section/initialization rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fxt/intern.h"
#include "schema/decode.h"
#include "schema/recording.h"

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
        struct hvfxt_sample s = {.fields = (uint32_t)w->fields,
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
        uint32_t n = (uint32_t)hvfxt_sample_words(&s);
        uint64_t *p = fxt_ring_reserve(r, n, 0);
        assert_non_null(p);
        assert_int_equal(hvfxt_enc_sample(p, n, &s), n);
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

static void check_sample(const struct want *w, const struct hvfxt_sample_view *s)
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
    if (hvfxt_recording_open(&w, path, 1000000000, NVCPU, "test-vm", &err))
        fail_msg("%s", err.msg);
    static struct fxt_ring rings[NVCPU];
    static struct fxt_intern interns[NVCPU];
    for (int v = 0; v < NVCPU; v++) {
        assert_int_equal(hvfxt_vcpu_ring_init(&rings[v], 1 << 16, (uint32_t)v, &err), 0);
        assert_int_equal(fxt_intern_init(&interns[v], 16, 100, 4096, &err), 0);
        nwant[v] = seen[v] = 0;
    }
    uint8_t bid[20] = {1, 2, 3};
    struct hvfxt_module mod = {
        .id = 9, .name = "vmlinux", .name_len = 7, .build_id = bid, .build_id_len = 20};
    struct hvfxt_mapping map = {.pid = 0x10000000,
                                .module_id = 9,
                                .start = 0xffffffff81000000ull,
                                .size = 1 << 24,
                                .vaddr = 0x1000000,
                                .flags = 5,
                                .ts = 3,
                                .has_file_offset = true, /* the optional eighth word */
                                .file_offset = 0x200000};
    struct fxt_arg setting = {
        .type = FXT_ARG_U64, .name = fxt_str_inline("period_ns"), .v.u64 = 1000000};
    assert_int_equal(hvfxt_write_marker(&w, HVFXT_SESSION_START, 1, &setting, 1, &err), 0);
    assert_int_equal(hvfxt_write_guest_process(&w, 0, "kernel", -1, &err), 0);
    assert_int_equal(hvfxt_write_guest_thread(&w, 5, 0, "init", 1, NULL, &err), 0);
    assert_int_equal(hvfxt_write_module(&w, &mod, &err), 0);
    assert_int_equal(hvfxt_write_mapping(&w, &map, &err), 0);
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
            assert_true(hvfxt_drain_vcpu(&w, (uint32_t)v, &rings[v], false, &err) >= 0);
    }
    for (int v = 0; v < NVCPU; v++)
        assert_true(hvfxt_drain_vcpu(&w, (uint32_t)v, &rings[v], true, &err) >= 0);
    assert_int_equal(hvfxt_write_marker(&w, HVFXT_SESSION_STOP, 2, NULL, 0, &err), 0);
    assert_int_equal(fxt_writer_close(&w, &err), 0);

    const void *buf;
    size_t len;
    assert_int_equal(fxtr_map_file(path, &buf, &len, &err), 0);
    struct fxtr_reader r;
    static struct hvfxt_record hx;
    const struct fxtr_record *rec = &hx.fxt;
    fxtr_init(&r, buf, len);
    int rc, control = 0;
    while ((rc = hvfxt_next(&r, &hx, &err)) == 1) {
        assert_false(rec->unknown);
        if (rec->type == FXTR_METADATA || rec->type == FXTR_INIT || rec->type == FXTR_STRING ||
            rec->type == FXTR_THREAD)
            continue;
        if (rec->provider == 0) {
            if (hx.kind == HVFXT_REC_MODULE) {
                assert_true(hx.u.module.id == 9 && sv(hx.u.module.name, "vmlinux"));
                assert_int_equal(hx.u.module.build_id_len, 20);
                assert_memory_equal(hx.u.module.build_id, bid, 20);
                control |= 1;
            } else if (hx.kind == HVFXT_REC_MAPPING) {
                const struct hvfxt_mapping *got = &hx.u.mapping;
                assert_true(got->pid == map.pid && got->module_id == map.module_id &&
                            got->start == map.start && got->size == map.size &&
                            got->vaddr == map.vaddr && got->flags == map.flags &&
                            got->ts == map.ts && got->has_file_offset &&
                            got->file_offset == map.file_offset);
                control |= 2;
            } else if (rec->type == FXTR_EVENT && sv(rec->u.event.name, HVFXT_SESSION_START)) {
                assert_true(rec->u.event.nargs == 1 && rec->u.event.args[0].v.u == 1000000);
                assert_true(rec->u.event.tid == HVFXT_KOID_CONTROL);
                control |= 4;
            } else if (rec->type == FXTR_KOBJ && sv(rec->u.kobj.name, "init")) {
                assert_true(rec->u.kobj.koid == 0x40000005 &&
                            rec->u.kobj.args[0].type == FXTR_ARG_KOID &&
                            rec->u.kobj.args[0].v.u == 0x10000000);
                control |= 8;
            } else if (rec->type == FXTR_KOBJ && sv(rec->u.kobj.name, "vcpu 2")) {
                assert_true(rec->u.kobj.koid == 0x1002 && rec->u.kobj.args[0].v.u == 1);
                control |= 16;
            }
            continue;
        }
        assert_true(rec->provider >= 1 && rec->provider <= NVCPU);
        assert_true(rec->ticks_per_second == 1000000000);
        unsigned v = rec->provider - 1;
        assert_true(seen[v] < nwant[v]);
        const struct want *e = &wants[v][seen[v]++];
        if (e->kind == 1) {
            assert_true(hx.kind == HVFXT_REC_SAMPLE);
            check_sample(e, &hx.u.sample);
        } else {
            assert_int_equal(rec->type, FXTR_EVENT);
            check_event(e, rec);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
