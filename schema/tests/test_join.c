/* schema/join.h: partial records joined with their completion in file order, the entry pc
 * kept over the completion's first frame, a partial record that comes after its completion
 * joined from the recent table, never-completed ones flushed with no user frames, many waiting
 * ids each completed in O(1), what is kept bounded by what waits, and a callback's error
 * stopping the join. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "schema/join.h"

/* What the callback saw: per joined sample, its ts, its frames and the appended ones. */
struct seen {
    size_t n;
    uint64_t ts[16];
    uint32_t nown[16], nuser[16];
    uint64_t first_user[16], own_last[16];
    int fail_at; /* -1: never */
};

static int on_joined(void *ctx, const struct hvfxt_join_sample *s, const uint64_t *addr,
                     const uint32_t *flags, uint32_t n, struct hv_err *err)
{
    struct seen *w = ctx;
    (void)flags;
    if ((int)w->n == w->fail_at)
        return hv_errf(err, "stop here");
    if (w->n < 16) {
        w->ts[w->n] = s->ts;
        w->nown[w->n] = s->n;
        w->own_last[w->n] = s->n ? s->addr[s->n - 1] : 0;
        w->nuser[w->n] = n;
        w->first_user[w->n] = n ? addr[0] : 0;
    }
    w->n++;
    return 0;
}

static struct hvfxt_join_sample partial(uint64_t ts, const uint64_t *addr, const uint32_t *flags,
                                        uint32_t n, bool entry_pc)
{
    return (struct hvfxt_join_sample){.ts = ts,
                                      .pid = 7,
                                      .tid = 8,
                                      .vcpu = (uint32_t)(ts % 2),
                                      .cpl = 0,
                                      .addr = addr,
                                      .flags = flags,
                                      .n = n,
                                      .entry_pc = entry_pc};
}

static void test_join_in_order(void **state)
{
    (void)state;
    struct seen w = {.fail_at = -1};
    struct hv_err err = {0};
    struct hvfxt_join j;
    assert_int_equal(hvfxt_join_init(&j, on_joined, &w, &err), 0);
    /* Two kernel samples of one thread's system call: kernel frames, then the user pc saved at
     * entry (0x401000) on the first; none on the second (its user walk was deferred). */
    uint64_t k1[] = {0xffffffff81000010, 0xffffffff81000020, 0x401000}, k2[] = {0xffffffff81000030};
    uint32_t f1[3] = {0}, f2[1] = {0};
    struct hvfxt_join_sample a = partial(1, k1, f1, 3, true), b = partial(2, k2, f2, 1, false);
    uint64_t id = (1ull << 56) | 5;
    assert_int_equal(hvfxt_join_partial(&j, id, &a, &err), 0);
    k1[2] = 0xdead; /* the join keeps its own copy */
    assert_int_equal(hvfxt_join_partial(&j, id, &b, &err), 0);
    assert_int_equal(w.n, 0);
    /* Back in user mode at 0x401004 (where it returned to), called from 0x402000, 0x403000. */
    uint64_t user[] = {0x401004, 0x402000, 0x403000};
    uint32_t uf[3] = {0};
    assert_int_equal(hvfxt_join_complete(&j, id, user, uf, 3, &err), 0);
    assert_int_equal(w.n, 2);
    assert_int_equal(w.ts[0], 1);
    assert_int_equal(w.own_last[0], 0x401000); /* the entry pc, not the caller's clobber */
    assert_int_equal(w.nuser[0], 2);           /* the completion's first frame gave way */
    assert_int_equal(w.first_user[0], 0x402000);
    assert_int_equal(w.ts[1], 2);
    assert_int_equal(w.nuser[1], 3);
    assert_int_equal(w.first_user[1], 0x401004);
    assert_int_equal(j.completions, 1);
    /* Completed: nothing left to flush. */
    assert_int_equal(hvfxt_join_flush(&j, &err), 0);
    assert_int_equal(w.n, 2);
    assert_int_equal(j.unjoined, 0);
    hvfxt_join_free(&j);
}

static void test_partial_after_completion(void **state)
{
    (void)state;
    struct seen w = {.fail_at = -1};
    struct hv_err err = {0};
    struct hvfxt_join j;
    assert_int_equal(hvfxt_join_init(&j, on_joined, &w, &err), 0);
    uint64_t user[] = {0x401004, 0x402000};
    uint32_t uf[2] = {0};
    uint64_t id = (3ull << 56) | 9;
    /* A completion with nothing waiting (yet): kept, nothing emitted. */
    assert_int_equal(hvfxt_join_complete(&j, id, user, uf, 2, &err), 0);
    assert_int_equal(w.n, 0);
    /* Another vCPU's ring, drained later, had a partial record of the same id. */
    uint64_t k[] = {0xffffffff81000010};
    uint32_t f[1] = {0};
    struct hvfxt_join_sample a = partial(4, k, f, 1, false);
    assert_int_equal(hvfxt_join_partial(&j, id, &a, &err), 0);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.nuser[0], 2);
    assert_int_equal(w.first_user[0], 0x401004);
    /* Another id: waits for its own completion. */
    struct hvfxt_join_sample b = partial(5, k, f, 1, false);
    assert_int_equal(hvfxt_join_partial(&j, id + 1, &b, &err), 0);
    assert_int_equal(w.n, 1);
    assert_int_equal(hvfxt_join_flush(&j, &err), 0);
    assert_int_equal(w.n, 2);
    assert_int_equal(w.ts[1], 5);
    assert_int_equal(w.nuser[1], 0); /* never completed: its kernel part alone */
    assert_int_equal(j.unjoined, 1);
    hvfxt_join_free(&j);
}

static void test_many_waiting(void **state)
{
    (void)state;
    /* 200000 ids waiting, completed in reverse order: each completion finds its own. */
    enum { N = 200000 };
    struct seen w = {.fail_at = -1};
    struct hv_err err = {0};
    struct hvfxt_join j;
    assert_int_equal(hvfxt_join_init(&j, on_joined, &w, &err), 0);
    uint64_t k[] = {0xffffffff81000010};
    uint32_t f[1] = {0};
    for (uint64_t i = 0; i < N; i++) {
        struct hvfxt_join_sample a = partial(i, k, f, 1, false);
        assert_int_equal(hvfxt_join_partial(&j, (1ull << 56) | i, &a, &err), 0);
    }
    uint64_t user[] = {0x401004};
    uint32_t uf[1] = {0};
    for (uint64_t i = N; i-- > 0;)
        assert_int_equal(hvfxt_join_complete(&j, (1ull << 56) | i, user, uf, 1, &err), 0);
    assert_int_equal(w.n, N);
    assert_int_equal(w.ts[0], N - 1);
    assert_int_equal(hvfxt_join_flush(&j, &err), 0);
    assert_int_equal(w.n, N);
    hvfxt_join_free(&j);
}

/* A million continuations, two partial records each, completed as a recording goes: what the
 * join keeps follows what waits (a few slots), not the million; never-completed records come
 * out of the flush in file order though their slots were reused out of it. */
static void test_bounded_by_waiting(void **state)
{
    (void)state;
    struct seen w = {.fail_at = -1};
    struct hvfxt_join j;
    struct hv_err err = {0};
    assert_int_equal(hvfxt_join_init(&j, on_joined, &w, &err), 0);
    uint64_t k[2] = {0xffffffff81000010ull, 0xffffffff81000020ull}, u[1] = {0x401000};
    uint32_t kf[2] = {0, 1}, uf[1] = {0};
    for (uint64_t id = 1; id <= 1000000; id++) {
        struct hvfxt_join_sample a = partial(id * 2, k, kf, 2, false),
                                 b = partial(id * 2 + 1, k, kf, 2, false);
        assert_int_equal(hvfxt_join_partial(&j, id, &a, &err), 0);
        assert_int_equal(hvfxt_join_partial(&j, id, &b, &err), 0);
        assert_int_equal(hvfxt_join_complete(&j, id, u, uf, 1, &err), 0);
    }
    assert_int_equal(w.n, 2000000);
    print_message("kept: %zu record slots, %zu ids\n", j.pend.n, j.chains.n);
    assert_true(j.pend.n <= 2 && j.chains.n <= 10000);
    /* Three that never complete, the slots of the last completed ones taken out of order. */
    for (uint64_t id = 2000001; id <= 2000003; id++) {
        struct hvfxt_join_sample a = partial(id, k, kf, 2, false);
        assert_int_equal(hvfxt_join_partial(&j, id, &a, &err), 0);
    }
    w.n = 0;
    assert_int_equal(hvfxt_join_flush(&j, &err), 0);
    assert_int_equal(w.n, 3);
    assert_true(w.ts[0] == 2000001 && w.ts[1] == 2000002 && w.ts[2] == 2000003);
    hvfxt_join_free(&j);
}

static void test_callback_error(void **state)
{
    (void)state;
    struct seen w = {.fail_at = 1};
    struct hv_err err = {0};
    struct hvfxt_join j;
    assert_int_equal(hvfxt_join_init(&j, on_joined, &w, &err), 0);
    uint64_t k[] = {0xffffffff81000010};
    uint32_t f[1] = {0};
    struct hvfxt_join_sample a = partial(1, k, f, 1, false);
    assert_int_equal(hvfxt_join_partial(&j, 11, &a, &err), 0);
    assert_int_equal(hvfxt_join_partial(&j, 11, &a, &err), 0);
    assert_int_equal(hvfxt_join_complete(&j, 11, k, f, 1, &err), -1);
    assert_string_equal(err.msg, "stop here");
    hvfxt_join_free(&j); /* what was left is freed (ASan) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_in_order),  cmocka_unit_test(test_partial_after_completion),
        cmocka_unit_test(test_many_waiting),   cmocka_unit_test(test_bounded_by_waiting),
        cmocka_unit_test(test_callback_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
