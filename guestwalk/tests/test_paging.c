/* Page-table translation and iteration on synthetic guest memory images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guest_image.h"
#include "guestwalk/paging.h"

#define USER_VA   0x00007f1234560000ull
#define KERNEL_VA 0xffffffff81000000ull
#define KERNEL_1G 0xffffc00000000000ull

/* Sign-extend an index-space address for the paging mode of the image. */
static uint64_t canon(const struct gimg *g, uint64_t va)
{
    unsigned top = g->la57 ? 56 : 47;
    return (va & (1ull << top)) ? va | ~((1ull << top) - 1) : va;
}

static int setup4(void **state)
{
    static struct gimg g;
    if (gimg_init(&g, false) != 0)
        return -1;
    *state = &g;
    return 0;
}

static int setup5(void **state)
{
    static struct gimg g;
    if (gimg_init(&g, true) != 0)
        return -1;
    *state = &g;
    return 0;
}

static int teardown(void **state)
{
    gimg_free(*state);
    return 0;
}

static void mmu_for(struct gimg *g, struct pt_mmu *mmu)
{
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    assert_int_equal(pt_mmu_init(mmu, c.cr0, c.cr3, c.cr4, c.efer, 0, 0), PT_OK);
}

/* 4 KiB, 2 MiB and 1 GiB pages: GPA, page size and effective permissions. */
static void test_page_sizes(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    assert_int_equal(mmu.mode, g->la57 ? PT_MODE_5LEVEL : PT_MODE_4LEVEL);

    uint64_t p4k = gimg_alloc_page(g);
    assert_non_null(gimg_map(g, USER_VA, p4k, 4096, GIMG_USER_RW | GIMG_XD));
    assert_non_null(gimg_map(g, 0x600000, 0x400000, 2ull << 20, GIMG_P | GIMG_US));
    assert_non_null(gimg_map(g, KERNEL_1G, 0, 1ull << 30, GIMG_KERN_RW));
    /* A 1 GiB page whose tail lies in the second RAM slot. */
    assert_non_null(gimg_map(g, 0x40000000ull, 0, 1ull << 30, GIMG_USER_RW));

    struct pt_xlate x;
    struct pt_fault f;
    assert_int_equal(pt_translate(&mmu, &g->mem, USER_VA + 0x123, PT_ACC_USER, &x, &f), 0);
    assert_int_equal(x.gpa, p4k + 0x123);
    assert_int_equal(x.page_size, 4096);
    assert_true(x.user && x.writable && x.nx);

    assert_int_equal(pt_translate(&mmu, &g->mem, 0x6abcde, PT_ACC_USER, &x, &f), 0);
    assert_int_equal(x.gpa, 0x400000 + 0xabcde);
    assert_int_equal(x.page_size, 2ull << 20);
    assert_true(x.user && !x.writable && !x.nx);

    assert_int_equal(pt_translate(&mmu, &g->mem, KERNEL_1G + 0x10042, PT_ACC_SUPERVISOR, &x, &f),
                     0);
    assert_int_equal(x.gpa, 0x10042);
    assert_int_equal(x.page_size, 1ull << 30);
    assert_false(x.user);

    assert_int_equal(
        pt_translate(&mmu, &g->mem, 0x40000000ull + GIMG_RAM1_GPA + 8, PT_ACC_USER, &x, &f), 0);
    assert_int_equal(x.gpa, GIMG_RAM1_GPA + 8);
    /* ... and the hole between the slots is not RAM, although the page maps it. */
    assert_int_equal(
        pt_translate(&mmu, &g->mem, 0x40000000ull + GIMG_HOLE_GPA, PT_ACC_USER, &x, &f), -1);
    assert_int_equal(f.reason, PT_PAGE_OUTSIDE_RAM);
    assert_int_equal(f.level, 3);
    assert_int_equal(f.gpa, GIMG_HOLE_GPA);
}

/* 5-level only: addresses that need bits 48..56, which 4-level paging calls non-canonical. */
static void test_la57_wide_addresses(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    assert_int_equal(mmu.va_bits, 57);
    const uint64_t wide_user = 0x00ff123456789000ull, wide_kernel = 0xff11000000001000ull;
    uint64_t a = gimg_alloc_page(g), b = gimg_alloc_page(g);
    assert_non_null(gimg_map(g, wide_user, a, 4096, GIMG_USER_RW));
    assert_non_null(gimg_map(g, wide_kernel, b, 4096, GIMG_KERN_RW));
    struct pt_xlate x;
    struct pt_fault f;
    assert_int_equal(pt_translate(&mmu, &g->mem, wide_user + 7, PT_ACC_USER, &x, &f), 0);
    assert_int_equal(x.gpa, a + 7);
    assert_int_equal(pt_translate(&mmu, &g->mem, wide_kernel, PT_ACC_SUPERVISOR, &x, &f), 0);
    assert_int_equal(x.gpa, b);
    /* The PML5 index is what separates these two: bits 56..48. */
    assert_int_equal(*gimg_entry(g, wide_user, 5) & GIMG_P, GIMG_P);
    /* Bit 57 breaks canonicality even with LA57. */
    assert_int_equal(pt_translate(&mmu, &g->mem, 1ull << 57, PT_ACC_USER, &x, &f), -1);
    assert_int_equal(f.reason, PT_NON_CANONICAL);
    assert_int_equal(f.level, 0);

    /* The same tables read as 4-level (CR4.LA57 clear) must not translate wide addresses. */
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    struct pt_mmu four;
    pt_mmu_init(&four, c.cr0, c.cr3, c.cr4 & ~PT_CR4_LA57, c.efer, 0, 0);
    assert_int_equal(pt_translate(&four, &g->mem, wide_user, PT_ACC_USER, &x, &f), -1);
    assert_int_equal(f.reason, PT_NON_CANONICAL);
}

static void test_4level_rejects_wide(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    struct pt_fault f;
    assert_int_equal(pt_translate(&mmu, &g->mem, 0x0000800000000000ull, PT_ACC_USER, NULL, &f), -1);
    assert_int_equal(f.reason, PT_NON_CANONICAL);
    assert_false(pt_canonical(&mmu, 0xff00000000000000ull));
    assert_true(pt_canonical(&mmu, 0xffff800000000000ull));
    assert_true(pt_canonical(&mmu, 0x00007fffffffffffull));
}

/* A missing entry at each level is reported with that level and its index. */
static void test_not_present_each_level(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    unsigned top = g->la57 ? 5 : 4;
    for (unsigned level = top; level >= 1; level--) {
        uint64_t va = USER_VA + ((uint64_t)level << 30); /* separate tables per iteration */
        assert_non_null(gimg_map(g, va, gimg_alloc_page(g), 4096, GIMG_USER_RW));
        uint64_t *e = gimg_entry(g, va, level);
        assert_non_null(e);
        uint64_t saved = *e;
        *e &= ~GIMG_P;
        struct pt_fault f;
        assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, &f), -1);
        assert_int_equal(f.reason, PT_NOT_PRESENT);
        assert_int_equal(f.level, level);
        assert_int_equal(f.index, (va >> (12 + 9 * (level - 1))) & 511);
        assert_int_equal(f.va, va);
        *e = saved;
        assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, &f), 0);
    }
}

static void expect_reserved(struct gimg *g, const struct pt_mmu *mmu, uint64_t va, unsigned level)
{
    struct pt_fault f;
    assert_int_equal(pt_translate(mmu, &g->mem, va, PT_ACC_SUPERVISOR, NULL, &f), -1);
    assert_int_equal(f.reason, PT_RESERVED_BIT);
    assert_int_equal(f.level, level);
}

/* Reserved bits (SDM Vol. 3A §4.5.4): address bits above MAXPHYADDR, XD without EFER.NXE, PS in a
 * PML4E, the bits between PAT and the address in large-page entries. */
static void test_reserved_bits(void **state)
{
    struct gimg *g = *state;
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    struct pt_mmu mmu40, nonx, mmu;
    pt_mmu_init(&mmu40, c.cr0, c.cr3, c.cr4, c.efer, 0, 40);
    pt_mmu_init(&nonx, c.cr0, c.cr3, c.cr4, c.efer & ~PT_EFER_NXE, 0, 0);
    mmu_for(g, &mmu);

    uint64_t va = 0x10000000;
    uint64_t *pte = gimg_map(g, va, gimg_alloc_page(g), 4096, GIMG_USER_RW);
    assert_non_null(pte);
    assert_int_equal(pt_translate(&mmu40, &g->mem, va, PT_ACC_USER, NULL, NULL), 0);
    *pte |= 1ull << 45; /* above MAXPHYADDR = 40, below 52 */
    expect_reserved(g, &mmu40, va, 1);
    *pte &= ~(1ull << 45);

    *pte |= GIMG_XD;
    expect_reserved(g, &nonx, va, 1);
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, NULL), 0);
    *pte &= ~GIMG_XD;

    uint64_t *pml4e = gimg_entry(g, va, 4);
    *pml4e |= GIMG_PS;
    expect_reserved(g, &mmu, va, 4);
    *pml4e &= ~GIMG_PS;

    uint64_t *pde = gimg_map(g, 0x20000000, 0x200000, 2ull << 20, GIMG_KERN_RW);
    assert_non_null(pde);
    assert_int_equal(pt_translate(&mmu, &g->mem, 0x20000000, PT_ACC_SUPERVISOR, NULL, NULL), 0);
    *pde |= 1ull << 13;
    expect_reserved(g, &mmu, 0x20000000, 2);

    uint64_t *pdpte = gimg_map(g, 0x8000000000ull, 0, 1ull << 30, GIMG_KERN_RW);
    assert_non_null(pdpte);
    *pdpte |= 1ull << 20;
    expect_reserved(g, &mmu, 0x8000000000ull, 3);
    /* Bit 12 is PAT in a large-page entry, not part of the address and not reserved. */
    *pdpte = (*pdpte & ~(1ull << 20)) | (1ull << 12);
    struct pt_xlate x;
    assert_int_equal(
        pt_translate(&mmu, &g->mem, 0x8000000000ull + 0x5000, PT_ACC_SUPERVISOR, &x, NULL), 0);
    assert_int_equal(x.gpa, 0x5000);
}

/* A user access needs U/S at every level; the fault names the first level without it. */
static void test_user_supervisor(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    uint64_t va = 0x30000000;
    uint64_t *pte = gimg_map(g, va, gimg_alloc_page(g), 4096, GIMG_KERN_RW);
    struct pt_fault f;
    struct pt_xlate x;
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, &f), -1);
    assert_int_equal(f.reason, PT_USER_VIOLATION);
    assert_int_equal(f.level, 1);
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_SUPERVISOR, &x, &f), 0);
    assert_false(x.user);

    *pte |= GIMG_US;
    uint64_t *pde = gimg_entry(g, va, 2);
    *pde &= ~GIMG_US;
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, &f), -1);
    assert_int_equal(f.reason, PT_USER_VIOLATION);
    assert_int_equal(f.level, 2);
    *pde |= GIMG_US;
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, &x, &f), 0);
    assert_true(x.user);
}

/* Tables that point at themselves: the recursive slot works like on real systems, and a table
 * that is its own child at every level still ends after one entry per level. */
static void test_self_referencing_tables(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    unsigned top = g->la57 ? 5 : 4;
    uint64_t *root = gimg_host(g, g->root);
    root[510] = g->root | GIMG_KERN_RW;
    /* Index 510 at every level: the walk lands on the root table itself as the data page. */
    uint64_t va = 0;
    for (unsigned level = top; level >= 1; level--)
        va |= 510ull << (12 + 9 * (level - 1));
    va = canon(g, va);
    struct pt_xlate x;
    struct pt_fault f;
    assert_int_equal(pt_translate(&mmu, &g->mem, va + 16, PT_ACC_SUPERVISOR, &x, &f), 0);
    assert_int_equal(x.gpa, g->root + 16);
    root[510] = 0;
}

/* Paging structures or pages outside RAM (in the MMIO hole, past the end) are errors. */
static void test_outside_ram(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    uint64_t va = 0x50000000;
    assert_non_null(gimg_map(g, va, gimg_alloc_page(g), 4096, GIMG_USER_RW));
    uint64_t *pde = gimg_entry(g, va, 2);
    uint64_t saved = *pde;
    struct pt_fault f;

    *pde = GIMG_HOLE_GPA | GIMG_USER_RW; /* page table in the MMIO hole */
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, &f), -1);
    assert_int_equal(f.reason, PT_TABLE_OUTSIDE_RAM);
    assert_int_equal(f.level, 1);
    assert_int_equal(f.gpa, GIMG_HOLE_GPA);

    *pde = (GIMG_PAST_RAM + (1ull << 30)) | GIMG_USER_RW; /* past all RAM */
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, &f), -1);
    assert_int_equal(f.reason, PT_TABLE_OUTSIDE_RAM);
    *pde = saved;

    uint64_t *pte = gimg_entry(g, va, 1);
    *pte = GIMG_PAST_RAM | GIMG_USER_RW;
    assert_int_equal(pt_translate(&mmu, &g->mem, va, PT_ACC_USER, NULL, &f), -1);
    assert_int_equal(f.reason, PT_PAGE_OUTSIDE_RAM);
    assert_int_equal(f.level, 1);
    assert_int_equal(f.gpa, GIMG_PAST_RAM);

    /* CR3 itself outside RAM. */
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    struct pt_mmu bad;
    pt_mmu_init(&bad, c.cr0, GIMG_HOLE_GPA + 0x3000, c.cr4, c.efer, 0, 0);
    assert_int_equal(pt_translate(&bad, &g->mem, va, PT_ACC_USER, NULL, &f), -1);
    assert_int_equal(f.reason, PT_TABLE_OUTSIDE_RAM);
    assert_int_equal(f.level, g->la57 ? 5 : 4);
}

/* CR3 low bits (PCID or PWT/PCD) and high bits (no-flush) do not move the root. */
static void test_cr3_pcid_masked(void **state)
{
    struct gimg *g = *state;
    uint64_t page = gimg_alloc_page(g);
    assert_non_null(gimg_map(g, 0x60000000, page, 4096, GIMG_USER_RW));
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    struct pt_mmu mmu;
    pt_mmu_init(&mmu, c.cr0, c.cr3 | 0x7ab | (1ull << 63), c.cr4 | PT_CR4_PCIDE, c.efer, 0, 0);
    assert_int_equal(mmu.root_user, g->root);
    struct pt_xlate x;
    assert_int_equal(pt_translate(&mmu, &g->mem, 0x60000000, PT_ACC_USER, &x, NULL), 0);
    assert_int_equal(x.gpa, page);
}

/* KPTI (Linux PTI): kernel PGD at an 8 KiB-aligned page, user PGD 4 KiB above it, with the user
 * half in both and the kernel half only in the kernel PGD. */
static void test_kpti_pair(void **state)
{
    struct gimg *g = *state;
    uint64_t kpgd = gimg_alloc_page(g), upgd = gimg_alloc_page(g);
    if (kpgd & 0x1000) { /* need an even/odd pair */
        kpgd = upgd;
        upgd = gimg_alloc_page(g);
    }
    assert_int_equal(upgd, kpgd + 0x1000);
    uint64_t upage = gimg_alloc_page(g), kpage = gimg_alloc_page(g);
    assert_non_null(gimg_map_in(g, kpgd, USER_VA, upage, 4096, GIMG_USER_RW));
    assert_non_null(gimg_map_in(g, upgd, USER_VA, upage, 4096, GIMG_USER_RW));
    assert_non_null(gimg_map_in(g, kpgd, KERNEL_VA, kpage, 4096, GIMG_KERN_RW));

    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 3);
    uint64_t user_cr3 = upgd | (1ull << 11) | 5; /* PTI user PCID bit 11, PCID 5 */
    struct pt_mmu mmu;
    struct pt_xlate x;
    struct pt_fault f;
    pt_mmu_init(&mmu, c.cr0, user_cr3, c.cr4 | PT_CR4_PCIDE, c.efer, 0, 0);
    assert_int_equal(pt_translate(&mmu, &g->mem, USER_VA, PT_ACC_USER, &x, &f), 0);
    assert_int_equal(x.gpa, upage);
    /* The user PGD does not map the kernel; the fallback with bit 12 cleared does. */
    assert_int_equal(
        pt_translate_root(&mmu, &g->mem, mmu.root_kernel, KERNEL_VA, PT_ACC_SUPERVISOR, &x, &f),
        -1);
    assert_int_equal(f.reason, PT_NOT_PRESENT);
    assert_int_equal(pt_translate(&mmu, &g->mem, KERNEL_VA + 8, PT_ACC_SUPERVISOR, &x, &f), 0);
    assert_int_equal(x.gpa, kpage + 8);

    /* An explicit kernel CR3 replaces the guess. */
    pt_mmu_init(&mmu, c.cr0, user_cr3, c.cr4 | PT_CR4_PCIDE, c.efer, kpgd | 3, 0);
    assert_int_equal(mmu.root_kernel, kpgd);
    assert_int_equal(mmu.root_kernel_alt, UINT64_MAX);
    assert_int_equal(pt_translate(&mmu, &g->mem, KERNEL_VA, PT_ACC_SUPERVISOR, &x, &f), 0);

    /* Without KPTI a PGD may sit at an odd page; it is tried as is first. */
    assert_non_null(gimg_map_in(g, upgd, KERNEL_VA, kpage + 4096, 4096, GIMG_KERN_RW));
    pt_mmu_init(&mmu, c.cr0, upgd, c.cr4, c.efer, 0, 0);
    assert_int_equal(pt_translate(&mmu, &g->mem, KERNEL_VA, PT_ACC_SUPERVISOR, &x, &f), 0);
    assert_int_equal(x.gpa, kpage + 4096);
}

static void test_not_long_mode(void **state)
{
    struct gimg *g = *state;
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    struct pt_mmu mmu;
    assert_int_equal(pt_mmu_init(&mmu, c.cr0 & ~PT_CR0_PG, c.cr3, c.cr4, c.efer, 0, 0),
                     PT_NOT_LONG_MODE);
    assert_non_null(strstr(mmu.mode_why, "CR0.PG"));
    assert_int_equal(pt_mmu_init(&mmu, c.cr0, c.cr3, c.cr4 & ~PT_CR4_PAE, c.efer, 0, 0),
                     PT_NOT_LONG_MODE);
    assert_non_null(strstr(mmu.mode_why, "CR4.PAE"));
    assert_int_equal(pt_mmu_init(&mmu, c.cr0, c.cr3, c.cr4, c.efer & ~PT_EFER_LMA, 0, 0),
                     PT_NOT_LONG_MODE);
    assert_non_null(strstr(mmu.mode_why, "EFER.LMA"));
    struct pt_fault f;
    assert_int_equal(pt_translate(&mmu, &g->mem, 0x1000, PT_ACC_SUPERVISOR, NULL, &f), -1);
    assert_int_equal(f.reason, PT_NOT_LONG_MODE);
    assert_string_equal(pt_fault_reason_str(f.reason), "guest not in long mode");
    assert_false(pt_canonical(&mmu, 0));
    assert_int_equal(pt_for_each_mapping(&mmu, &g->mem, 0, 0x1000, 10, NULL, NULL),
                     PT_ITER_BAD_MODE);
}

struct collected {
    struct pt_mapping m[16];
    unsigned n, stop_after;
};

static int collect(void *ctx, const struct pt_mapping *m)
{
    struct collected *c = ctx;
    if (c->n < 16)
        c->m[c->n] = *m;
    c->n++;
    return c->stop_after && c->n >= c->stop_after;
}

/* The iterator reports leaf mappings in VA order with effective permissions and sizes, skips
 * non-present and reserved entries, and stops at the entry cap. */
static void test_iterator(void **state)
{
    struct gimg *g = *state;
    const uint64_t base = 0x7f0000000000ull; /* its own PML4 slot */
    uint64_t p0 = gimg_alloc_page(g);
    assert_non_null(gimg_map(g, base + 0x3000, p0, 4096, GIMG_USER_RW | GIMG_XD));
    assert_non_null(gimg_map(g, base + 0x5000, gimg_alloc_page(g), 4096, GIMG_P | GIMG_US));
    uint64_t *rsvd = gimg_map(g, base + 0x6000, gimg_alloc_page(g), 4096, GIMG_USER_RW);
    *rsvd |= 1ull << 51; /* reserved with MAXPHYADDR 40: skipped */
    assert_non_null(gimg_map(g, base + (4ull << 20), GIMG_HOLE_GPA, 2ull << 20, GIMG_USER_RW));
    assert_non_null(gimg_map(g, base + (1ull << 30), 0, 1ull << 30, GIMG_KERN_RW));
    assert_non_null(gimg_map(g, base + (3ull << 30), 0, 4096, GIMG_USER_RW)); /* out of range */

    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    struct pt_mmu mmu;
    pt_mmu_init(&mmu, c.cr0, c.cr3, c.cr4, c.efer, 0, 40);
    struct collected col = {0};
    assert_int_equal(pt_for_each_mapping(&mmu, &g->mem, base + 0x1000, base + (2ull << 30) - 1,
                                         100000, collect, &col),
                     PT_ITER_DONE);
    assert_int_equal(col.n, 4);
    assert_int_equal(col.m[0].va, base + 0x3000);
    assert_int_equal(col.m[0].gpa, p0);
    assert_true(col.m[0].user && col.m[0].writable && col.m[0].nx && col.m[0].in_ram);
    assert_int_equal(col.m[1].va, base + 0x5000);
    assert_true(col.m[1].user && !col.m[1].writable && !col.m[1].nx);
    assert_int_equal(col.m[2].va, base + (4ull << 20));
    assert_int_equal(col.m[2].page_size, 2ull << 20);
    assert_false(col.m[2].in_ram); /* maps the MMIO hole */
    assert_int_equal(col.m[3].page_size, 1ull << 30);
    assert_false(col.m[3].user);

    col = (struct collected){.stop_after = 2};
    assert_int_equal(
        pt_for_each_mapping(&mmu, &g->mem, base, base + (2ull << 30) - 1, 100000, collect, &col),
        PT_ITER_STOPPED);
    assert_int_equal(col.n, 2);

    col = (struct collected){0};
    /* 6 entries reach base + 0x3000 (one per upper level, PT indexes 1..3); the 7th is over. */
    assert_int_equal(pt_for_each_mapping(&mmu, &g->mem, base + 0x1000, base + (2ull << 30) - 1, 6,
                                         collect, &col),
                     PT_ITER_CAPPED);
    assert_int_equal(col.n, 1);

    assert_int_equal(pt_for_each_mapping(&mmu, &g->mem, base + 10, base, 10, collect, &col),
                     PT_ITER_BAD_MODE);
    assert_int_equal(pt_for_each_mapping(&mmu, &g->mem, 0x1000, KERNEL_VA, 10, collect, &col),
                     PT_ITER_BAD_MODE);
}

/* Kernel half: addresses come back sign-extended. A self-referencing root costs at most the
 * entry cap. */
static void test_iterator_kernel_and_self_map(void **state)
{
    struct gimg *g = *state;
    struct pt_mmu mmu;
    mmu_for(g, &mmu);
    uint64_t kpage = gimg_alloc_page(g);
    assert_non_null(gimg_map(g, KERNEL_VA, kpage, 4096, GIMG_KERN_RW));
    struct collected col = {0};
    assert_int_equal(pt_for_each_mapping(&mmu, &g->mem, KERNEL_VA - (1ull << 21),
                                         KERNEL_VA + (1ull << 21), 100000, collect, &col),
                     PT_ITER_DONE);
    assert_int_equal(col.n, 1);
    assert_int_equal(col.m[0].va, KERNEL_VA);
    assert_int_equal(col.m[0].gpa, kpage);

    uint64_t *root = gimg_host(g, g->root);
    /* 64 entries point back at the root: every level sees the same table, so the range below
     * holds 64^(levels-1) leaf "pages"; only the cap keeps this cheap. */
    for (unsigned i = 300; i < 364; i++)
        root[i] = g->root | GIMG_USER_RW;
    uint64_t lo = 300ull << (g->la57 ? 48 : 39);
    uint64_t hi = canon(g, lo + (1ull << (g->la57 ? 48 : 39)) - 1);
    lo = canon(g, lo);
    col = (struct collected){0};
    assert_int_equal(pt_for_each_mapping(&mmu, &g->mem, lo, hi, 5000, collect, &col),
                     PT_ITER_CAPPED);
    assert_true(col.n > 0);
    for (unsigned i = 300; i < 364; i++)
        root[i] = 0;
}

int main(void)
{
    const struct CMUnitTest tests4[] = {
        cmocka_unit_test_setup_teardown(test_page_sizes, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_4level_rejects_wide, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_not_present_each_level, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_reserved_bits, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_user_supervisor, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_self_referencing_tables, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_outside_ram, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_cr3_pcid_masked, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_kpti_pair, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_not_long_mode, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_iterator, setup4, teardown),
        cmocka_unit_test_setup_teardown(test_iterator_kernel_and_self_map, setup4, teardown),
    };
    const struct CMUnitTest tests5[] = {
        cmocka_unit_test_setup_teardown(test_page_sizes, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_la57_wide_addresses, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_not_present_each_level, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_user_supervisor, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_self_referencing_tables, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_outside_ram, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_kpti_pair, setup5, teardown),
        cmocka_unit_test_setup_teardown(test_iterator_kernel_and_self_map, setup5, teardown),
    };
    int fails = cmocka_run_group_tests_name("paging_4level", tests4, NULL, NULL);
    fails += cmocka_run_group_tests_name("paging_5level", tests5, NULL, NULL);
    return fails;
}
