/* The exit core's id tables and labels (sampler/exit/id_table.h, id_label.h): exact ids, the
 * full table counted, the thread key's fold, one id per key when vCPU threads race to insert it,
 * identities ended and their slots given back as new incarnations (a churn of 100,000 keys
 * through 1,024 slots, and vCPU threads inserting while the drain thread reclaims), and labels
 * that change only when the guest's words do. */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/exit/id_table.h"

static struct id_table *table(void)
{
    struct id_table *t = malloc(sizeof(*t));
    assert_non_null(t);
    id_table_init(t);
    return t;
}

static void test_proc_ids(void **state)
{
    (void)state;
    struct id_table *t = table();
    struct id_proc_info info = {.cr3 = 0x1000, .first_ts = 7};
    uint32_t a = id_proc_get(t, 0x1000, &info);
    assert_true(a >= 1 && a <= ID_MAX_PROCS);
    assert_int_equal(id_proc_get(t, 0x1000, &info), a); /* the same key, the same id */
    info.cr3 = 0x2000;
    uint32_t b = id_proc_get(t, 0x2000, &info);
    assert_true(b != a && b >= 1);
    /* Key 0 is a valid key (a kernel thread's): stored as key + 1, never "empty". */
    uint32_t z = id_proc_get(t, 0, &info);
    assert_true(z >= 1 && z != a && z != b);
    const struct id_proc *p = id_proc_at(t, a);
    assert_non_null(p);
    assert_int_equal(p->info.cr3, 0x1000);
    assert_int_equal(p->info.first_ts, 7);
    assert_null(id_proc_at(t, 0));
    assert_null(id_proc_at(t, ID_MAX_PROCS + 1));
    assert_null(id_proc_label(t, 0));
    assert_null(id_thread_label(t, ID_MAX_THREADS + 1));
    assert_int_equal(atomic_load(&t->full), 0);
    free(t);
}

/* Filling the table: a new key that finds no free slot within ID_PROBES of its hash gets id 0
 * and is counted; the table holds most of its slots by then (linear probing, a mixed hash). */
static void test_full(void **state)
{
    (void)state;
    struct id_table *t = table();
    struct id_proc_info info = {0};
    uint64_t k = 0, in = 0, out = 0;
    for (; k < 4 * ID_MAX_PROCS; k++) {
        if (id_proc_get(t, 0x1000 * (k + 1), &info))
            in++;
        else
            out++;
    }
    printf("id table: %" PRIu64 " of %u process slots taken, %" PRIu64 " keys found none\n",
           in, ID_MAX_PROCS, out);
    assert_true(in > ID_MAX_PROCS * 9 / 10 && in <= ID_MAX_PROCS);
    assert_int_equal(atomic_load(&t->full), out);
    assert_int_equal(in + out, 4 * ID_MAX_PROCS);
    /* A key already in still finds its id. */
    assert_int_not_equal(id_proc_get(t, 0x1000, &info), 0);
    /* Id 0 is inert everywhere. */
    id_proc_seen_user(t, 0, 5);
    id_thread_mark_user(t, 0);
    assert_false(id_thread_is_user(t, 0));
    assert_null(id_thread_cont(t, 0));
    free(t);
}

/* Threads: (process, key) pairs; the key's bits above 53 fold together (id_table.c). */
static void test_thread_ids(void **state)
{
    (void)state;
    struct id_table *t = table();
    uint32_t t1 = id_thread_get(t, 1, 0x7f0000001000, 10);
    assert_int_not_equal(t1, 0);
    assert_int_equal(id_thread_get(t, 1, 0x7f0000001000, 99), t1);
    uint32_t t2 = id_thread_get(t, 2, 0x7f0000001000, 11); /* another process, same key */
    assert_true(t2 != 0 && t2 != t1);
    assert_int_equal(id_thread_get(t, 1, 0x7f0000001000 | (1ull << 60), 12), t1);
    const struct id_thread *th = id_thread_at(t, t1);
    assert_non_null(th);
    assert_int_equal(th->proc, 1);
    assert_int_equal(th->first_ts, 10);
    assert_false(id_thread_is_user(t, t1));
    id_thread_mark_user(t, t1);
    assert_true(id_thread_is_user(t, t1));
    assert_false(id_thread_is_user(t, t2));
    _Atomic uint64_t *c = id_thread_cont(t, t1);
    assert_non_null(c);
    assert_int_equal(atomic_load(c), 0);
    free(t);
}

struct racer {
    struct id_table *t;
    uint32_t ids[512];
};

static void *race(void *arg)
{
    struct racer *r = arg;
    struct id_proc_info info = {0};
    for (unsigned k = 0; k < 512; k++)
        r->ids[k] = id_proc_get(r->t, 0x40000ull * (k + 1), &info);
    return NULL;
}

/* Two vCPU threads meeting the same 512 address spaces at once: one id each, the same on both. */
static void test_race(void **state)
{
    (void)state;
    for (int round = 0; round < 20; round++) {
        struct racer a = {.t = table()}, b = {.t = a.t};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, race, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, race, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        unsigned ready = 0;
        for (unsigned k = 0; k < 512; k++) {
            assert_int_not_equal(a.ids[k], 0);
            assert_int_equal(a.ids[k], b.ids[k]);
        }
        for (uint32_t id = 1; id <= ID_MAX_PROCS; id++)
            ready += id_proc_at(a.t, id) != NULL;
        assert_int_equal(ready, 512);
        free(a.t);
    }
}


/* An ended identity's key matches nothing: the same key again is a new identity. Its slot,
 * given back, is a new incarnation with its own number, its state clean. */
static void test_end_release(void **state)
{
    (void)state;
    struct id_table *t = table();
    struct id_proc_info info = {.cr3 = 0x5000, .first_ts = 1};
    uint32_t a = id_proc_get(t, 0x5000, &info);
    uint32_t n0 = id_proc_number(t, a);
    assert_int_equal(n0, a); /* generation 0: the number is the slot */
    uint32_t th = id_thread_get(t, a, 77, 1);
    assert_int_not_equal(th, 0);
    atomic_store(id_thread_cont(t, th), 1234);
    id_thread_mark_user(t, th);
    assert_int_equal(id_proc_find(t, 0x5000), a);
    assert_int_equal(id_thread_find(t, a, 77), th);
    /* Not ended: release does nothing. */
    id_proc_release(t, a);
    assert_true(id_proc_live(t, a));
    assert_true(id_thread_end(t, th));
    assert_false(id_thread_end(t, th)); /* once */
    assert_true(id_proc_end(t, a));
    assert_false(id_proc_live(t, a));
    assert_int_equal(id_proc_find(t, 0x5000), 0);
    assert_int_equal(id_thread_find(t, a, 77), 0);
    /* Ended but not given back: the key goes elsewhere. */
    uint32_t b = id_proc_get(t, 0x5000, &info);
    assert_true(b != 0 && b != a);
    id_proc_end(t, b);
    id_thread_release(t, th);
    id_proc_release(t, a);
    id_proc_release(t, b);
    /* Given back: the first free slot of its path is taken again, as a new incarnation. */
    uint32_t c = id_proc_get(t, 0x5000, &info);
    assert_int_equal(c, a);
    assert_int_equal(id_proc_number(t, c), a + ID_MAX_PROCS);
    assert_int_equal(id_proc_of_number(t, a + ID_MAX_PROCS), a);
    assert_int_equal(id_proc_of_number(t, a), 0); /* the old incarnation's number: nobody's */
    uint32_t th2 = id_thread_get(t, c, 77, 2);
    assert_int_equal(th2, th);
    assert_int_equal(id_thread_number(t, th2), th + ID_MAX_THREADS);
    assert_int_equal(atomic_load(id_thread_cont(t, th2)), 0);
    assert_false(id_thread_is_user(t, th2));
    assert_int_equal(atomic_load(&t->full), 0);
    free(t);
}

/* 100,000 short-lived processes of one thread each, never more than 64 alive, through tables of
 * 1,024 and 8,192 slots: no lookup finds the tables full, every incarnation has its own
 * number, and the probe chains stay whole (every live key is found). */
static void test_churn(void **state)
{
    (void)state;
    struct id_table *t = table();
    enum { LIVE = 64, TOTAL = 100000 };
    uint32_t live_p[LIVE] = {0}, live_t[LIVE] = {0};
    uint64_t keys[LIVE] = {0};
    uint8_t *seen = calloc(0x30000000u / 8, 1);
    assert_non_null(seen);
    for (uint64_t k = 0; k < TOTAL; k++) {
        unsigned i = (unsigned)(k % LIVE);
        if (live_p[i]) {
            assert_true(id_thread_end(t, live_t[i]));
            assert_true(id_proc_end(t, live_p[i]));
            id_thread_release(t, live_t[i]);
            id_proc_release(t, live_p[i]);
        }
        /* Roots reused as a guest reuses freed pages: a few hundred distinct ones. */
        keys[i] = 0x100000ull * (k % 300 + 1) + (k << 40);
        struct id_proc_info info = {.cr3 = keys[i]};
        live_p[i] = id_proc_get(t, keys[i], &info);
        assert_int_not_equal(live_p[i], 0);
        live_t[i] = id_thread_get(t, live_p[i], k, k);
        assert_int_not_equal(live_t[i], 0);
        uint32_t n = id_proc_number(t, live_p[i]);
        assert_false(seen[n / 8] & (1u << (n % 8)));
        seen[n / 8] |= (uint8_t)(1u << (n % 8));
        for (unsigned j = 0; j < LIVE; j++)
            if (live_p[j])
                assert_int_equal(id_proc_find(t, keys[j]), live_p[j]);
    }
    assert_int_equal(atomic_load(&t->full), 0);
    free(seen);
    free(t);
}

struct churner {
    struct id_table *t;
    _Atomic bool stop;
    uint64_t base;
    uint64_t lookups, zero;
};

static void *churn_lookups(void *arg)
{
    struct churner *c = arg;
    struct id_proc_info info = {0};
    uint64_t k = 0;
    while (!atomic_load(&c->stop)) {
        uint64_t key = c->base + 0x1000 * (k++ % 200);
        uint32_t p = id_proc_get(c->t, key, &info);
        c->zero += p == 0;
        if (p)
            c->zero += id_thread_get(c->t, p, k % 7, k) == 0;
        c->lookups++;
    }
    return NULL;
}

/* Two vCPU threads meeting 200 address spaces over and over while the drain thread ends every
 * identity it finds and gives the slots back: no lookup is ever refused, and afterwards each
 * key has one live slot at most. */
static void test_churn_race(void **state)
{
    (void)state;
    struct churner c = {.t = table(), .base = 0x10000000};
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, churn_lookups, &c), 0);
    assert_int_equal(pthread_create(&b, NULL, churn_lookups, &c), 0);
    for (int round = 0; round < 2000; round++) {
        uint32_t ended_t[ID_MAX_THREADS], ended_p[ID_MAX_PROCS];
        unsigned nt = 0, np = 0;
        for (uint32_t id = 1; id <= ID_MAX_THREADS; id++)
            if (id_thread_end(c.t, id))
                ended_t[nt++] = id;
        for (uint32_t id = 1; id <= ID_MAX_PROCS; id++)
            if (id_proc_end(c.t, id))
                ended_p[np++] = id;
        /* The test's grace: every stop that could hold an old id is a plain lookup, done long
         * before the slots are reused below (the recorder waits on the exit core's counters). */
        for (unsigned i = 0; i < nt; i++)
            id_thread_release(c.t, ended_t[i]);
        for (unsigned i = 0; i < np; i++)
            id_proc_release(c.t, ended_p[i]);
    }
    atomic_store(&c.stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("churn race: %" PRIu64 " lookups, %" PRIu64 " refused\n", c.lookups, c.zero);
    assert_int_equal(c.zero, 0);
    assert_int_equal(atomic_load(&c.t->full), 0);
    free(c.t);
}

static void comm(char out[GUESTOS_COMM_LEN], const char *s)
{
    memset(out, 0, GUESTOS_COMM_LEN);
    size_t n = strlen(s);
    memcpy(out, s, n < GUESTOS_COMM_LEN ? n : GUESTOS_COMM_LEN);
}

/* A label: unwritten until set; the sequence moves by 2 per change and not at all for the same
 * words. */
static void test_label(void **state)
{
    (void)state;
    struct id_label l;
    memset(&l, 0, sizeof(l));
    struct id_label_value v;
    assert_false(id_label_get(&l, &v));
    char c[GUESTOS_COMM_LEN];
    comm(c, "nginx");
    id_label_set(&l, 42, false, c);
    assert_true(id_label_get(&l, &v));
    assert_int_equal(v.seq, 2);
    assert_int_equal(v.guest_id, 42);
    assert_false(v.kthread);
    assert_string_equal(v.comm, "nginx");
    id_label_set(&l, 42, false, c);
    assert_true(id_label_get(&l, &v));
    assert_int_equal(v.seq, 2);
    comm(c, "0123456789abcdef"); /* all 16 bytes: no NUL in the guest's words */
    id_label_set(&l, 42, false, c);
    assert_true(id_label_get(&l, &v));
    assert_int_equal(v.seq, 4);
    assert_string_equal(v.comm, "0123456789abcdef");
    id_label_set(&l, 2, true, c);
    assert_true(id_label_get(&l, &v));
    assert_int_equal(v.seq, 6);
    assert_true(v.kthread);
    /* A label a writer holds (odd): a second writer skips, a reader gives up in time. */
    atomic_store(&l.seq, 7);
    comm(c, "other");
    id_label_set(&l, 3, false, c);
    assert_int_equal(atomic_load(&l.seq), 7);
    assert_false(id_label_get(&l, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_ids),   cmocka_unit_test(test_full),
        cmocka_unit_test(test_thread_ids), cmocka_unit_test(test_race),
        cmocka_unit_test(test_end_release), cmocka_unit_test(test_churn),
        cmocka_unit_test(test_churn_race),  cmocka_unit_test(test_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
