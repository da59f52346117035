/* PTI pair recognition (guestwalk/pti.h) on synthetic page tables: a real pair (shared
 * next-level tables, NX on the kernel copy, Accessed set in one copy only), near misses that
 * must not pair, 5-level paging, and the cache with its re-check of negative answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestwalk/pti.h"
#include "guestwalk/tests/guest_image.h"

#define ADDR_MASK 0x000ffffffffff000ull

/* An 8 KiB-aligned pair of zeroed pages. */
static void alloc_pair(struct gimg *g, uint64_t *k, uint64_t *u)
{
    *k = gimg_alloc_page(g);
    *u = gimg_alloc_page(g);
    if (*k & 0x1000) {
        *k = *u;
        *u = gimg_alloc_page(g);
    }
    assert_int_equal(*u, *k + 0x1000);
}

/* Map a user page in the kernel PGD, then give the user PGD the same user half, as
 * pti_set_user_pgtbl does: same entries, NX only in the kernel copy. */
static void make_pair(struct gimg *g, uint64_t *k, uint64_t *u)
{
    alloc_pair(g, k, u);
    assert_non_null(gimg_map_in(g, *k, 0x400000, gimg_alloc_page(g), 4096, GIMG_USER_RW));
    assert_non_null(gimg_map_in(g, *k, 0x7ffff000, gimg_alloc_page(g), 4096, GIMG_USER_RW));
    uint64_t *kt = gimg_host(g, *k), *ut = gimg_host(g, *u);
    for (unsigned i = 0; i < 256; i++) {
        ut[i] = kt[i] | (kt[i] ? 1ull << 5 : 0); /* Accessed, set by the CPU in this copy */
        if (kt[i])
            kt[i] |= GIMG_XD;
    }
}

static int setup(void **state, bool la57)
{
    struct gimg *g = calloc(1, sizeof(*g));
    if (!g || gimg_init(g, la57)) {
        free(g);
        return -1;
    }
    *state = g;
    return 0;
}
static int setup4(void **state)
{
    return setup(state, false);
}
static int setup5(void **state)
{
    return setup(state, true);
}
static int teardown(void **state)
{
    gimg_free(*state);
    free(*state);
    return 0;
}

static void test_real_pair(void **state)
{
    struct gimg *g = *state;
    uint64_t k, u;
    make_pair(g, &k, &u);
    assert_true(pti_is_user_root(&g->mem, u, ADDR_MASK));
    assert_false(pti_is_user_root(&g->mem, k, ADDR_MASK)); /* bit 12 clear: never a user PGD */
    struct pti_cache c;
    pti_cache_init(&c);
    assert_int_equal(pti_canonical_root(&c, &g->mem, u, ADDR_MASK), k);
    assert_int_equal(pti_canonical_root(&c, &g->mem, k, ADDR_MASK), k);
}

static void test_not_pairs(void **state)
{
    struct gimg *g = *state;
    uint64_t k, u;
    /* Two unrelated address spaces that happen to sit in one 8 KiB block: each has its own
     * next-level tables. */
    alloc_pair(g, &k, &u);
    assert_non_null(gimg_map_in(g, k, 0x400000, gimg_alloc_page(g), 4096, GIMG_USER_RW));
    assert_non_null(gimg_map_in(g, u, 0x400000, gimg_alloc_page(g), 4096, GIMG_USER_RW));
    assert_false(pti_is_user_root(&g->mem, u, ADDR_MASK));
    /* Empty user halves: nothing says they belong together. */
    alloc_pair(g, &k, &u);
    assert_false(pti_is_user_root(&g->mem, u, ADDR_MASK));
    /* A real pair with one entry that differs in more than NX/A/D. */
    make_pair(g, &k, &u);
    uint64_t *ut = gimg_host(g, u);
    ut[0] ^= GIMG_RW;
    assert_false(pti_is_user_root(&g->mem, u, ADDR_MASK));
    ut[0] ^= GIMG_RW;
    assert_true(pti_is_user_root(&g->mem, u, ADDR_MASK));
    /* A pair whose lower page is outside RAM. */
    assert_false(pti_is_user_root(&g->mem, GIMG_HOLE_GPA + 0x1000, ADDR_MASK));
}

static void test_cache_rechecks_negatives(void **state)
{
    struct gimg *g = *state;
    uint64_t k, u;
    alloc_pair(g, &k, &u); /* not a pair yet: both halves empty */
    struct pti_cache c;
    pti_cache_init(&c);
    assert_int_equal(pti_canonical_root(&c, &g->mem, u, ADDR_MASK), u);
    /* The guest now fills both copies (the first sight was between two writes). */
    assert_non_null(gimg_map_in(g, k, 0x400000, gimg_alloc_page(g), 4096, GIMG_USER_RW));
    memcpy(gimg_host(g, u), gimg_host(g, k), 256 * 8);
    unsigned until = 0;
    while (pti_canonical_root(&c, &g->mem, u, ADDR_MASK) == u && until < 10 * PTI_RECHECK)
        until++;
    assert_int_equal(until, PTI_RECHECK);
    assert_int_equal(c.misses, 2);
    /* A positive answer stays. */
    for (unsigned i = 0; i < 3 * PTI_RECHECK; i++)
        assert_int_equal(pti_canonical_root(&c, &g->mem, u, ADDR_MASK), k);
    assert_int_equal(c.misses, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_real_pair, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_not_pairs, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_cache_rechecks_negatives, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_real_pair, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_not_pairs, setup5, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
