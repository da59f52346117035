/* The page-cache walk (guestos/linux/pagecache.c) on kernel structures laid out by hand behind a
 * fixed direct map: exact page frames for a one-entry tree, a two-level tree, a large folio with
 * sibling entries (5.17+) and with its head in every slot (before); holes for empty slots,
 * shadows of evicted pages, pages not up to date and pages moved to another file; refusals for a
 * node of another tree, a shift that does not descend and a node that points at itself; and the
 * file behind an address_space checked both ways. With PAGECACHE_SEED=DIR set it also writes
 * the image as fuzz_guestos_pagecache's seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/fuzz/fuzz_pagecache.h"

#define RAM_SIZE (1u << 20)
#define INO      4242ull

struct img {
    uint8_t *ram;
    struct gmem mem;
    struct direct_tables *pt;
    struct lx_kread kr;
};

static void w64(struct img *m, uint64_t off, uint64_t v)
{
    memcpy(m->ram + off, &v, 8);
}

/* A cached page: pfn's struct page says it is index `index` of the file, up to date, and its
 * bytes are `fill`. */
static void page(struct img *m, uint64_t pfn, uint64_t index, uint8_t fill)
{
    uint64_t p = PC_VMEMMAP + pfn * 64;
    w64(m, p + 0x0, 1u << 2); /* PG_uptodate */
    w64(m, p + 0x18, PC_VA(PC_MAPPING));
    w64(m, p + 0x20, index);
    memset(m->ram + pfn * 4096, fill, 4096);
}

static void node(struct img *m, unsigned i, uint8_t shift)
{
    m->ram[PC_NODES + i * 0x1000] = shift;
    w64(m, PC_NODES + i * 0x1000 + 0x18, PC_VA(PC_MAPPING) + 0x8);
}

static void slot(struct img *m, unsigned i, unsigned off, uint64_t entry)
{
    w64(m, PC_NODES + i * 0x1000 + 0x28 + 8ull * off, entry);
}

static int setup(void **state)
{
    struct img *m = calloc(1, sizeof(*m));
    m->ram = calloc(1, RAM_SIZE);
    m->pt = aligned_alloc(4096, sizeof(*m->pt));
    gmem_init(&m->mem);
    assert_int_equal(gmem_add(&m->mem, 0, RAM_SIZE, m->ram, NULL), 0);
    uint64_t root = direct_map_add(&m->mem, m->pt);
    assert_true(root != 0);
    char why[128];
    assert_int_equal(lx_kread_init(&m->kr, &m->mem, root, false, why, sizeof(why)), 0);
    /* The file: address_space <-> inode, its super block's UUID. */
    w64(m, PC_MAPPING + 0x0, PC_VA(PC_INODE));
    w64(m, PC_INODE + 0x30, PC_VA(PC_MAPPING));
    w64(m, PC_INODE + 0x28, PC_VA(PC_SB));
    w64(m, PC_INODE + 0x40, INO);
    w64(m, PC_INODE + 0x50, 3 * 1048576 + 100);
    memset(m->ram + PC_SB + 0x100, 0xab, 16);
    *state = m;
    return 0;
}

static int teardown(void **state)
{
    struct img *m = *state;
    free(m->ram);
    free(m->pt);
    free(m);
    return 0;
}

static enum lx_cache_page find(struct img *m, uint64_t index, uint64_t *pfn)
{
    lx_kread_forget(&m->kr); /* the tests change memory between lookups */
    *pfn = UINT64_MAX;
    return lx_cache_find(&m->kr, &pc_cache_layout, &pc_file_layout, PC_VA(PC_VMEMMAP),
                         PC_VA(PC_MAPPING), index, pfn);
}

static void set_head(struct img *m, uint64_t entry)
{
    w64(m, PC_MAPPING + 0x10, entry);
}

static void test_file_of_mapping(void **state)
{
    struct img *m = *state;
    struct lx_page_file f;
    assert_true(lx_mapping_file(&m->kr, &pc_file_layout, PC_VA(PC_MAPPING), &f));
    assert_int_equal(f.ino, INO);
    assert_int_equal(f.size, 3 * 1048576 + 100);
    assert_int_equal(f.mapping, PC_VA(PC_MAPPING));
    assert_int_equal(f.uuid[0], 0xab);
    /* An inode that does not point back: another file's, or memory reused. */
    w64(m, PC_INODE + 0x30, PC_VA(PC_MAPPING) + 0x100);
    lx_kread_forget(&m->kr);
    assert_false(lx_mapping_file(&m->kr, &pc_file_layout, PC_VA(PC_MAPPING), &f));
    w64(m, PC_INODE + 0x30, PC_VA(PC_MAPPING));
    assert_false(lx_mapping_file(&m->kr, &pc_file_layout, 0x1000, &f)); /* a user address */
}

static void test_one_entry(void **state)
{
    struct img *m = *state;
    uint64_t pfn;
    page(m, 0x10, 0, 'a');
    set_head(m, PC_PAGE(0x10));
    assert_int_equal(find(m, 0, &pfn), LX_CACHE_CACHED);
    assert_int_equal(pfn, 0x10);
    assert_int_equal(find(m, 1, &pfn), LX_CACHE_HOLE);
    uint8_t buf[4096];
    lx_kread_forget(&m->kr);
    assert_int_equal(lx_cache_read(&m->kr, &pc_cache_layout, &pc_file_layout, PC_VA(PC_VMEMMAP),
                                   PC_VA(PC_MAPPING), 0, buf),
                     LX_CACHE_CACHED);
    assert_int_equal(buf[0], 'a');
    assert_int_equal(buf[4095], 'a');
    set_head(m, 0);
    assert_int_equal(find(m, 0, &pfn), LX_CACHE_HOLE); /* an empty file */
}

/* Root (shift 6) -> node (shift 0): index 70 is root slot 1, leaf slot 6. */
static void two_levels(struct img *m)
{
    node(m, 0, 6);
    node(m, 1, 0);
    set_head(m, PC_ENTRY(0));
    slot(m, 0, 1, PC_ENTRY(1));
    page(m, 0x20, 70, 'b');
    slot(m, 1, 6, PC_PAGE(0x20));
}

static void test_two_levels(void **state)
{
    struct img *m = *state;
    uint64_t pfn;
    two_levels(m);
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_CACHED);
    assert_int_equal(pfn, 0x20);
    assert_int_equal(find(m, 71, &pfn), LX_CACHE_HOLE);   /* an empty slot */
    assert_int_equal(find(m, 5, &pfn), LX_CACHE_HOLE);    /* an empty root slot */
    assert_int_equal(find(m, 4096, &pfn), LX_CACHE_HOLE); /* beyond the root's reach */
    assert_int_equal(find(m, 1ull << 50, &pfn), LX_CACHE_HOLE);
    /* The shadow of an evicted page (a value entry), then the retry entry. */
    slot(m, 1, 7, (12345ull << 1) | 1);
    assert_int_equal(find(m, 71, &pfn), LX_CACHE_HOLE);
    slot(m, 1, 7, (256ull << 2) | 2);
    assert_int_equal(find(m, 71, &pfn), LX_CACHE_HOLE);
    /* A page being read: not up to date. */
    w64(m, PC_VMEMMAP + 0x20 * 64, 0);
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_HOLE);
    w64(m, PC_VMEMMAP + 0x20 * 64, 1u << 2);
    /* Truncated and reused by another file meanwhile. */
    w64(m, PC_VMEMMAP + 0x20 * 64 + 0x18, PC_VA(0x7000));
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_HOLE);
    w64(m, PC_VMEMMAP + 0x20 * 64 + 0x18, PC_VA(PC_MAPPING));
    /* The page says it is another index of the file. */
    w64(m, PC_VMEMMAP + 0x20 * 64 + 0x20, 99);
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_BAD);
    w64(m, PC_VMEMMAP + 0x20 * 64 + 0x20, 70);
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_CACHED);
}

static void test_forged_trees(void **state)
{
    struct img *m = *state;
    uint64_t pfn;
    two_levels(m);
    /* A node of another tree. */
    w64(m, PC_NODES + 0x1000 + 0x18, PC_VA(0x7008));
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_BAD);
    w64(m, PC_NODES + 0x1000 + 0x18, PC_VA(PC_MAPPING) + 0x8);
    /* A child whose shift does not descend by one chunk. */
    m->ram[PC_NODES + 0x1000] = 6;
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_BAD);
    m->ram[PC_NODES + 0x1000] = 0;
    /* A node pointing at itself: refused at the next level, no loop. */
    slot(m, 0, 1, PC_ENTRY(0));
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_BAD);
    /* A shift that is no multiple of the chunk, a page outside the vmemmap array, a user
     * pointer for a node. */
    slot(m, 0, 1, PC_ENTRY(1));
    m->ram[PC_NODES] = 7;
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_BAD);
    m->ram[PC_NODES] = 6;
    slot(m, 1, 6, PC_PAGE(0x20) + 8);
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_BAD);
    slot(m, 1, 6, PC_PAGE(0x20));
    set_head(m, 0x4002);
    assert_int_equal(find(m, 70, &pfn), LX_CACHE_BAD);
}

/* A large folio of 4 pages at indices 8-11 (head pfn 0x40). */
static void folio(struct img *m)
{
    node(m, 0, 0);
    set_head(m, PC_ENTRY(0));
    page(m, 0x40, 8, 'c');
    for (unsigned i = 1; i < 4; i++) {
        w64(m, PC_VMEMMAP + (0x40 + i) * 64 + 0x8, PC_PAGE(0x40) | 1); /* compound_head */
        memset(m->ram + (0x40 + i) * 4096, 'c' + i, 4096);
    }
}

static void test_large_folio(void **state)
{
    struct img *m = *state;
    uint64_t pfn;
    folio(m);
    /* 5.17+: one entry and sibling entries pointing at its slot. */
    slot(m, 0, 8, PC_PAGE(0x40));
    for (unsigned i = 9; i < 12; i++)
        slot(m, 0, i, (8ull << 2) | 2);
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(find(m, 8 + i, &pfn), LX_CACHE_CACHED);
        assert_int_equal(pfn, 0x40 + i);
    }
    assert_int_equal(find(m, 12, &pfn), LX_CACHE_HOLE);
    /* A sibling pointing forward or at itself is no sibling. */
    slot(m, 0, 10, (11ull << 2) | 2);
    assert_int_equal(find(m, 10, &pfn), LX_CACHE_HOLE);
    /* Before 5.17: the head in every slot. */
    for (unsigned i = 9; i < 12; i++)
        slot(m, 0, i, PC_PAGE(0x40));
    assert_int_equal(find(m, 10, &pfn), LX_CACHE_CACHED);
    assert_int_equal(pfn, 0x42);
    /* A tail page that names another head. */
    w64(m, PC_VMEMMAP + 0x42 * 64 + 0x8, PC_PAGE(0x30) | 1);
    assert_int_equal(find(m, 10, &pfn), LX_CACHE_BAD);
}

/* The image as the fuzz target's seed (its layout is fuzz_pagecache.h's). */
static void test_write_seed(void **state)
{
    struct img *m = *state;
    const char *dir = getenv("PAGECACHE_SEED");
    two_levels(m);
    node(m, 2, 0);
    slot(m, 0, 0, PC_ENTRY(2));
    slot(m, 2, 8, PC_PAGE(0x40));
    slot(m, 2, 9, (8ull << 2) | 2);
    page(m, 0x40, 8, 'c');
    w64(m, PC_VMEMMAP + 0x41 * 64 + 0x8, PC_PAGE(0x40) | 1);
    char path[4096];
    snprintf(path, sizeof(path), "%s/two-levels-folio", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    /* Up to the last struct page used: the rest is zeros. */
    assert_int_equal(fwrite(m->ram, 1, PC_VMEMMAP + 0x1000, f), PC_VMEMMAP + 0x1000);
    assert_int_equal(fclose(f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_of_mapping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forged_trees, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_folio, setup, teardown),
    };
    if (getenv("PAGECACHE_SEED")) {
        const struct CMUnitTest seed[] = {
            cmocka_unit_test_setup_teardown(test_write_seed, setup, teardown)};
        return cmocka_run_group_tests(seed, NULL, NULL);
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
