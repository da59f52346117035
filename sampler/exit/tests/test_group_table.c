/* The group table (sampler/exit/group_table.h): one number per key however many vCPU threads
 * insert it at once, distinct numbers for distinct keys, a renumbered slot's new number, a freed
 * slot's key given a fresh one, and a key of 0 never a group. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sampler/exit/group_table.h"

#define NKEYS    1500
#define NTHREADS 4

static struct group_table table;
static uint32_t got[NTHREADS][NKEYS];

static uint64_t key(unsigned i)
{
    return 0xffff888004000000ull + (uint64_t)i * 0xc0; /* css_sets a slab apart */
}

static void *inserter(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg;
    for (unsigned round = 0; round < 3; round++)
        for (unsigned j = 0; j < NKEYS; j++) {
            unsigned i = (j * 7 + me * 311) % NKEYS; /* each thread its own order */
            uint32_t n = group_table_number(&table, key(i), 1000 + round);
            if (round == 0 || !got[me][i])
                got[me][i] = n;
            else if (got[me][i] != n)
                got[me][i] = UINT32_MAX; /* a key's number changed: fails below */
        }
    return NULL;
}

static void test_concurrent_inserts(void **state)
{
    (void)state;
    pthread_t th[NTHREADS];
    for (uintptr_t t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, inserter, (void *)t), 0);
    for (unsigned t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    assert_int_equal(atomic_load(&table.full), 0);
    uint8_t *used = calloc(NKEYS + 1, 1);
    for (unsigned i = 0; i < NKEYS; i++) {
        uint32_t n = got[0][i];
        assert_true(n >= 1 && n <= NKEYS);
        for (unsigned t = 1; t < NTHREADS; t++)
            assert_int_equal(got[t][i], n);
        assert_false(used[n]); /* distinct keys, distinct numbers */
        used[n] = 1;
    }
    free(used);
    assert_int_equal(atomic_load(&table.next), NKEYS);
}

static void test_renumber_and_free(void **state)
{
    (void)state;
    struct group_table *t = calloc(1, sizeof(*t));
    assert_int_equal(group_table_number(t, 0, 1), 0);
    uint32_t a = group_table_number(t, key(1), 1);
    unsigned slot = GROUP_TABLE_SLOTS;
    for (unsigned i = 0; i < GROUP_TABLE_SLOTS; i++)
        if (atomic_load(&t->slot[i].key) == key(1))
            slot = i;
    assert_int_not_equal(slot, GROUP_TABLE_SLOTS);
    uint32_t b = group_table_renumber(t, slot);
    assert_true(b > a);
    assert_int_equal(group_table_number(t, key(1), 2), b);
    group_table_free(t, slot);
    assert_int_equal(atomic_load(&t->slot[slot].key), 0);
    uint32_t c = group_table_number(t, key(1), 3);
    assert_true(c > b);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_inserts),
        cmocka_unit_test(test_renumber_and_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
