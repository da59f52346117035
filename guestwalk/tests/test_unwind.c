/* Frame-pointer unwinding on synthetic guest stacks: normal, kernel, corrupt and hostile ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest_image.h"
#include "guestwalk/unwind.h"

#define CODE_VA     0x400000ull       /* user code page (nops) */
#define USTACK_LO   0x7ffe00000000ull /* user stack: 1 MiB */
#define USTACK_SIZE (1ull << 20)
#define KSTACK_LO   0xffffc90000000000ull /* kernel stack: 64 KiB */
#define KSTACK_SIZE (64ull << 10)
#define KCODE_VA    0xffffffff81000000ull
#define NRET        16

struct fixture {
    struct gimg g;
    struct gw_walker w;
    uint64_t uret[NRET], kret[NRET];
};

static int setup_mode(void **state, bool la57)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f || gimg_init(&f->g, la57) != 0)
        return -1;
    struct gimg *g = &f->g;
    if (gimg_map_fresh(g, CODE_VA, 4096, GIMG_P | GIMG_US) != 0 ||
        gimg_map_fresh(g, KCODE_VA, 4096, GIMG_P) != 0 ||
        gimg_map_fresh(g, USTACK_LO, USTACK_SIZE, GIMG_USER_RW | GIMG_XD) != 0 ||
        gimg_map_fresh(g, KSTACK_LO, KSTACK_SIZE, GIMG_KERN_RW | GIMG_XD) != 0)
        return -1;
    uint8_t nops[4096];
    memset(nops, 0x90, sizeof(nops));
    gimg_write(g, CODE_VA, nops, sizeof(nops));
    gimg_write(g, KCODE_VA, nops, sizeof(nops));
    for (unsigned i = 0; i < NRET; i++) {
        f->uret[i] = CODE_VA + 0x100 + 0x10 * i;
        f->kret[i] = KCODE_VA + 0x100 + 0x10 * i;
    }
    if (gw_walker_init(&f->w, &g->mem, NULL, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int setup4(void **state)
{
    return setup_mode(state, false);
}

static int setup5(void **state)
{
    return setup_mode(state, true);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    gw_walker_fini(&f->w);
    gimg_free(&f->g);
    free(f);
    return 0;
}

/* Begin a stop and walk; returns the frame count. */
static unsigned walk(struct fixture *f, uint64_t rip, uint64_t rsp, uint64_t rbp, uint8_t cpl,
                     struct gw_stack *st)
{
    struct gw_snapshot c = gimg_cpu(&f->g, rip, rsp, rbp, cpl);
    gw_walker_begin(&f->w, &c);
    return gw_unwind(&f->w, st);
}

static void assert_pcs(const struct gw_stack *st, uint64_t pc0, const uint64_t *ret, unsigned n)
{
    assert_int_equal(st->count, n + 1);
    assert_int_equal(st->pc[0], pc0);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(st->pc[i + 1], ret[i]);
}

static void test_user_stack_normal(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + 0x8000, fp0 = rsp + 0x40;
    assert_int_equal(gimg_write_chain(&f->g, fp0, 10, 0x30, f->uret), 0);
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
    assert_int_equal(walk(f, CODE_VA + 0x10, rsp, fp0, 3, &st), 11);
    assert_pcs(&st, CODE_VA + 0x10, f->uret, 10);
    assert_int_equal(st.stop, GW_STOP_CHAIN_END);
    assert_int_equal(st.leaf, GW_LEAF_NONE);
    assert_string_equal(gw_stop_reason_str(st.stop), "end of frame chain");
}

/* CPL 0: same code, upper half. A user-half return address in a kernel chain is invalid. */
static void test_kernel_stack(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = KSTACK_LO + 0x1000, fp0 = rsp + 0x20;
    assert_int_equal(gimg_write_chain(&f->g, fp0, 6, 0x40, f->kret), 0);
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    walk(f, KCODE_VA + 8, rsp, fp0, 0, &st);
    assert_pcs(&st, KCODE_VA + 8, f->kret, 6);
    assert_int_equal(st.stop, GW_STOP_CHAIN_END);

    gimg_write_u64(&f->g, fp0 + 0x40 * 3 + 8, f->uret[0]);
    walk(f, KCODE_VA + 8, rsp, fp0, 0, &st);
    assert_int_equal(st.count, 4);
    assert_int_equal(st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(st.bad, GW_BAD_WRONG_HALF);
    assert_int_equal(st.bad_value, f->uret[0]);

    /* A user walk must not follow a frame pointer into the kernel half. */
    walk(f, CODE_VA, USTACK_LO + 0x100, fp0, 3, &st);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.bad, GW_BAD_WRONG_HALF);
}

static void test_misaligned(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + 0x8000, fp0 = rsp + 0x40;
    gimg_write_chain(&f->g, fp0, 8, 0x30, f->uret);
    gimg_write_u64(&f->g, fp0 + 0x30 * 2, fp0 + 0x30 * 3 + 4); /* record 2 -> misaligned */
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_pcs(&st, CODE_VA, f->uret, 3);
    assert_int_equal(st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(st.bad, GW_BAD_MISALIGNED);
    assert_int_equal(st.bad_value, fp0 + 0x30 * 3 + 4);

    walk(f, CODE_VA, rsp, fp0 + 1, 3, &st); /* misaligned from the start */
    assert_int_equal(st.count, 1);
    assert_int_equal(st.bad, GW_BAD_MISALIGNED);
}

static void test_cycles(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + 0x8000, fp0 = rsp + 0x40;
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);

    gimg_write_chain(&f->g, fp0, 4, 0x30, f->uret);
    gimg_write_u64(&f->g, fp0 + 0x30 * 3, fp0); /* last record -> first */
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_pcs(&st, CODE_VA, f->uret, 4);
    assert_int_equal(st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(st.bad, GW_BAD_NOT_INCREASING);

    gimg_write_u64(&f->g, fp0, fp0); /* a record pointing at itself */
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_pcs(&st, CODE_VA, f->uret, 1);
    assert_int_equal(st.bad, GW_BAD_NOT_INCREASING);

    gimg_write_u64(&f->g, fp0, fp0 + 8); /* overlapping the record just read */
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_int_equal(st.count, 2);
    assert_int_equal(st.bad, GW_BAD_NOT_INCREASING);
}

static void test_decreasing(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + 0x8000;
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    walk(f, CODE_VA, rsp, rsp - 0x100, 3, &st); /* RBP below RSP */
    assert_int_equal(st.count, 1);
    assert_int_equal(st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(st.bad, GW_BAD_NOT_INCREASING);

    uint64_t fp0 = rsp + 0x100;
    gimg_write_chain(&f->g, fp0, 3, 0x30, f->uret);
    gimg_write_u64(&f->g, fp0 + 0x30, fp0 - 0x40); /* record 1 points down */
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_pcs(&st, CODE_VA, f->uret, 2);
    assert_int_equal(st.bad, GW_BAD_NOT_INCREASING);
    assert_int_equal(st.bad_value, fp0 - 0x40);
}

/* A stack page that maps the MMIO hole: the walk stops with the page's GPA, no host read. */
static void test_stack_into_mmio(void **state)
{
    struct fixture *f = *state;
    const uint64_t mmio_va = USTACK_LO + USTACK_SIZE; /* right above the stack */
    assert_non_null(gimg_map(&f->g, mmio_va, GIMG_HOLE_GPA + 0x5000, 4096, GIMG_USER_RW));
    uint64_t rsp = mmio_va - 0x100, fp0 = rsp + 0x40;
    gimg_write_chain(&f->g, fp0, 2, 0x30, f->uret);
    gimg_write_u64(&f->g, fp0 + 0x30, mmio_va + 0x20);
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_pcs(&st, CODE_VA, f->uret, 2);
    assert_int_equal(st.stop, GW_STOP_UNMAPPED);
    assert_int_equal(st.fault.reason, PT_PAGE_OUTSIDE_RAM);
    assert_int_equal(st.fault.gpa, GIMG_HOLE_GPA + 0x5020);
    assert_int_equal(st.fault.va, mmio_va + 0x20);
    assert_int_equal(st.fault.level, 1);
}

static void test_unmapped(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + USTACK_SIZE - 0x100, fp0 = rsp + 0x40;
    gimg_write_chain(&f->g, fp0, 1, 0x30, f->uret);
    uint64_t target = USTACK_LO + USTACK_SIZE + 0x10000; /* nothing mapped there */
    gimg_write_u64(&f->g, fp0, target);
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_int_equal(st.count, 2);
    assert_int_equal(st.stop, GW_STOP_UNMAPPED);
    assert_int_equal(st.fault.va, target);
    assert_int_equal(st.fault.reason, PT_NOT_PRESENT);
    assert_int_equal(st.fault.level, 1); /* the stack's page table exists, this entry does not */
    assert_int_equal(st.fault.index, (target >> 12) & 511);
}

/* 10,000 frames: the default cap stops at 128; a walker configured deeper walks them all. */
static void test_ten_thousand_frames(void **state)
{
    struct fixture *f = *state;
    enum { N = 10000 };
    static uint64_t ret[N], pcs[N + 1];
    for (unsigned i = 0; i < N; i++)
        ret[i] = CODE_VA + 0x100 + i;
    uint64_t rsp = USTACK_LO + 0x100, fp0 = rsp + 0x10;
    assert_int_equal(gimg_write_chain(&f->g, fp0, N, 0x20, ret), 0);

    struct gw_stack st = GW_STACK_INIT(pcs, N + 1);
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_int_equal(st.count, GW_DEFAULT_MAX_DEPTH);
    assert_int_equal(st.stop, GW_STOP_DEPTH_CAP);
    assert_int_equal(st.pc[GW_DEFAULT_MAX_DEPTH - 1], ret[GW_DEFAULT_MAX_DEPTH - 2]);

    struct gw_walker deep;
    struct gw_config cfg = {.max_depth = N + 1};
    assert_int_equal(gw_walker_init(&deep, &f->g.mem, &cfg, NULL), 0);
    struct gw_snapshot c = gimg_cpu(&f->g, CODE_VA, rsp, fp0, 3);
    gw_walker_begin(&deep, &c);
    gw_unwind(&deep, &st);
    assert_pcs(&st, CODE_VA, ret, N);
    assert_int_equal(st.stop, GW_STOP_CHAIN_END);
    /* The array capacity caps too. */
    st.capacity = 50;
    gw_unwind(&deep, &st);
    assert_int_equal(st.count, 50);
    assert_int_equal(st.stop, GW_STOP_DEPTH_CAP);
    gw_walker_fini(&deep);
}

static void test_bad_return_addresses(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + 0x8000, fp0 = rsp + 0x40;
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    gimg_write_chain(&f->g, fp0, 4, 0x30, f->uret);
    uint64_t noncanon = f->g.la57 ? 0x0200000000000000ull : 0x0000900000000000ull;
    gimg_write_u64(&f->g, fp0 + 0x30 + 8, noncanon);
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_pcs(&st, CODE_VA, f->uret, 1);
    assert_int_equal(st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(st.bad, GW_BAD_NON_CANONICAL);
    assert_int_equal(st.bad_value, noncanon);

    gimg_write_u64(&f->g, fp0 + 0x30 + 8, 0); /* return address 0 ends the chain */
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_int_equal(st.count, 2);
    assert_int_equal(st.stop, GW_STOP_CHAIN_END);

    walk(f, CODE_VA, rsp, noncanon & ~7ull, 3, &st); /* non-canonical frame pointer */
    assert_int_equal(st.bad, GW_BAD_NON_CANONICAL);
}

static void test_window(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + 0x100;
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
    /* One frame larger than GW_DEFAULT_MAX_FRAME. */
    uint64_t fp0 = rsp + 0x40, far = fp0 + 16 + GW_DEFAULT_MAX_FRAME + 8;
    gimg_write_chain(&f->g, fp0, 1, 0x30, f->uret);
    gimg_write_u64(&f->g, fp0, far);
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_int_equal(st.count, 2);
    assert_int_equal(st.bad, GW_BAD_OUTSIDE_WINDOW);
    assert_int_equal(st.bad_value, far);

    /* Frames that each stay small but climb past RSP + the configured window. */
    struct gw_walker w;
    struct gw_config cfg = {.stack_window = 0x1000};
    gw_walker_init(&w, &f->g.mem, &cfg, NULL);
    gimg_write_chain(&f->g, fp0, 200, 0x40, (uint64_t[200]){[0 ... 199] = CODE_VA + 1});
    struct gw_snapshot c = gimg_cpu(&f->g, CODE_VA, rsp, fp0, 3);
    gw_walker_begin(&w, &c);
    gw_unwind(&w, &st);
    assert_int_equal(st.bad, GW_BAD_OUTSIDE_WINDOW);
    assert_true(st.bad_value - rsp >= 0x1000);
    assert_int_equal(st.count, 1 + (0x1000 - 0x40) / 0x40);
    gw_walker_fini(&w);
}

/* A user walk reads the stack with user-mode permissions: a supervisor page stops it. */
static void test_user_walk_supervisor_page(void **state)
{
    struct fixture *f = *state;
    uint64_t rsp = USTACK_LO + 0x10000, fp0 = rsp + 0x40;
    gimg_write_chain(&f->g, fp0, 3, 0x30, f->uret);
    uint64_t *pte = gimg_entry(&f->g, fp0, 1);
    *pte &= ~GIMG_US;
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    walk(f, CODE_VA, rsp, fp0, 3, &st);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.stop, GW_STOP_UNMAPPED);
    assert_int_equal(st.fault.reason, PT_USER_VIOLATION);
    /* The same stack walked as kernel-half? No: user addresses in a CPL 0 walk are the wrong
     * half, which is also why a kernel walk never wanders into user memory. */
    walk(f, CODE_VA, rsp, fp0, 0, &st);
    assert_int_equal(st.bad, GW_BAD_WRONG_HALF);
    *pte |= GIMG_US;
}

static void test_not_long_mode_and_capacity(void **state)
{
    struct fixture *f = *state;
    uint64_t pcs[4];
    struct gw_stack st = GW_STACK_INIT(pcs, 4);
    struct gw_snapshot c = gimg_cpu(&f->g, CODE_VA, USTACK_LO, USTACK_LO + 0x10, 3);
    c.efer &= ~PT_EFER_LMA;
    assert_int_equal(gw_walker_begin(&f->w, &c), PT_NOT_LONG_MODE);
    assert_int_equal(gw_unwind(&f->w, &st), 0);
    assert_int_equal(st.stop, GW_STOP_UNSUPPORTED_MODE);
    assert_int_equal(st.fault.reason, PT_NOT_LONG_MODE);

    uint64_t rsp = USTACK_LO + 0x8000;
    gimg_write_chain(&f->g, rsp, 3, 0x20, f->uret);
    st.capacity = 1;
    walk(f, CODE_VA, rsp, rsp, 3, &st);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.stop, GW_STOP_DEPTH_CAP);
    st.capacity = 0;
    walk(f, CODE_VA, rsp, rsp, 3, &st);
    assert_int_equal(st.count, 0);
    assert_int_equal(st.stop, GW_STOP_DEPTH_CAP);
}

/* KPTI: sampled at CPL 0 with the user CR3 still loaded (bit 12 set), the kernel stack is only
 * in the kernel PGD; the walker falls back to it, or uses an explicit kernel CR3. */
static void test_kpti_kernel_walk(void **state)
{
    struct fixture *f = *state;
    struct gimg *g = &f->g;
    uint64_t kpgd = g->root;
    /* A fresh 8 KiB-aligned pair: kernel PGD (a copy of the fixture's root) and user PGD. */
    uint64_t k2 = gimg_alloc_page(g);
    if (k2 & 0x1000)
        k2 = gimg_alloc_page(g);
    uint64_t u2 = gimg_alloc_page(g);
    assert_int_equal(u2, k2 + 0x1000);
    memcpy(gimg_host(g, k2), gimg_host(g, kpgd), 4096); /* full kernel view */
    uint64_t *upgd = gimg_host(g, u2), *kp = gimg_host(g, k2);
    for (unsigned i = 0; i < 256; i++) /* user view: lower half only */
        upgd[i] = kp[i];

    uint64_t rsp = KSTACK_LO + 0x2000, fp0 = rsp + 0x20;
    gimg_write_chain(g, fp0, 5, 0x40, f->kret);
    struct gw_snapshot c = gimg_cpu(g, KCODE_VA, rsp, fp0, 0);
    c.cr3 = u2 | (1ull << 11) | 1;
    c.cr4 |= PT_CR4_PCIDE;
    uint64_t pcs[32];
    struct gw_stack st = GW_STACK_INIT(pcs, 32);
    gw_walker_begin(&f->w, &c);
    gw_unwind(&f->w, &st);
    assert_pcs(&st, KCODE_VA, f->kret, 5);

    c.kernel_cr3 = k2;
    gw_walker_begin(&f->w, &c);
    gw_unwind(&f->w, &st);
    assert_pcs(&st, KCODE_VA, f->kret, 5);

    c.kernel_cr3 = u2; /* a wrong override is not second-guessed */
    gw_walker_begin(&f->w, &c);
    gw_unwind(&f->w, &st);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.stop, GW_STOP_UNMAPPED);
    assert_int_equal(st.fault.reason, PT_NOT_PRESENT);
}

/* gw_read_virt crosses pages that are not physically contiguous, reports the first byte it
 * cannot read, and the cache lives exactly until the next gw_walker_begin. */
static void test_read_virt_and_cache(void **state)
{
    struct fixture *f = *state;
    struct gimg *g = &f->g;
    const uint64_t va = 0x10000000;
    uint64_t a = gimg_alloc_page(g), b = gimg_alloc_page1(g); /* different slots */
    gimg_map(g, va, a, 4096, GIMG_USER_RW);
    gimg_map(g, va + 4096, b, 4096, GIMG_USER_RW);
    uint8_t pattern[8192], out[8192];
    for (unsigned i = 0; i < sizeof(pattern); i++)
        pattern[i] = (uint8_t)(i * 7 + 3);
    gimg_write(g, va, pattern, sizeof(pattern));

    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 3);
    gw_walker_begin(&f->w, &c);
    struct pt_fault fault;
    assert_int_equal(gw_read_virt(&f->w, va + 100, out, 8000, true, &fault), 0);
    assert_memory_equal(out, pattern + 100, 8000);
    assert_int_equal(gw_read_virt(&f->w, va + 8000, out, 300, true, &fault), -1);
    assert_int_equal(fault.va, va + 8192);
    assert_int_equal(fault.reason, PT_NOT_PRESENT);
    assert_int_equal(gw_read_virt(&f->w, va, out, GW_READ_VIRT_MAX + 1, true, &fault), -1);
    assert_int_equal(gw_read_virt(&f->w, UINT64_MAX - 3, out, 8, false, &fault), -1);

    uint64_t gpa;
    assert_int_equal(gw_translate(&f->w, va + 4096 + 5, true, &gpa, &fault), 0);
    assert_int_equal(gpa, b + 5);

    /* Remap the second page: the same stop still sees the cached translation ... */
    uint64_t c2 = gimg_alloc_page(g);
    memset(gimg_host(g, c2), 0xee, 4096);
    *gimg_entry(g, va + 4096, 1) = c2 | GIMG_USER_RW;
    uint64_t hits = f->w.tlb.hits;
    uint8_t byte;
    gw_read_virt(&f->w, va + 4096, &byte, 1, true, NULL);
    assert_int_equal(byte, pattern[4096]);
    assert_int_equal(f->w.tlb.hits, hits + 1);
    /* ... and the next stop sees the guest's new page tables. */
    gw_walker_begin(&f->w, &c);
    gw_read_virt(&f->w, va + 4096, &byte, 1, true, NULL);
    assert_int_equal(byte, 0xee);

    /* A cached supervisor translation does not let a user access through. */
    uint64_t k = gimg_alloc_page(g);
    gimg_map(g, va + 8192, k, 4096, GIMG_KERN_RW);
    assert_int_equal(gw_read_virt(&f->w, va + 8192, &byte, 1, false, &fault), 0);
    assert_int_equal(gw_read_virt(&f->w, va + 8192, &byte, 1, true, &fault), -1);
    assert_int_equal(fault.reason, PT_USER_VIOLATION);
}

/* A guest page that straddles the end of a gmem slot (slots need not be page-aligned in gmem):
 * bytes inside the slot are readable, the rest is outside RAM. */
static void test_page_straddling_slot_end(void **state)
{
    struct fixture *f = *state;
    struct gimg *g = &f->g;
    struct gmem short_mem;
    gmem_init(&short_mem);
    /* RAM slot 0 cut 100 bytes into some page. */
    const uint64_t va = 0x20000000;
    uint64_t *pte = gimg_map(g, va, 0, 4096, GIMG_USER_RW); /* tables first: below the cut */
    uint64_t page = gimg_alloc_page(g);
    *pte = page | GIMG_USER_RW;
    assert_int_equal(gmem_add(&short_mem, 0, page + 100, g->ram0, NULL), 0);
    memset(gimg_host(g, page), 0x5a, 4096);
    struct gw_walker w;
    assert_int_equal(gw_walker_init(&w, &short_mem, NULL, NULL), 0);
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 3);
    gw_walker_begin(&w, &c);
    uint8_t buf[128];
    struct pt_fault fault;
    assert_int_equal(gw_read_virt(&w, va, buf, 100, true, &fault), 0);
    assert_int_equal(buf[99], 0x5a);
    assert_int_equal(gw_read_virt(&w, va + 50, buf, 51, true, &fault), -1);
    assert_int_equal(fault.reason, PT_PAGE_OUTSIDE_RAM);
    assert_int_equal(fault.va, va + 100);
    gw_walker_fini(&w);
}

int main(void)
{
#define T4(fn) cmocka_unit_test_setup_teardown(fn, setup4, teardown)
#define T5(fn) cmocka_unit_test_setup_teardown(fn, setup5, teardown)
    const struct CMUnitTest tests4[] = {
        T4(test_user_stack_normal),
        T4(test_kernel_stack),
        T4(test_misaligned),
        T4(test_cycles),
        T4(test_decreasing),
        T4(test_stack_into_mmio),
        T4(test_unmapped),
        T4(test_ten_thousand_frames),
        T4(test_bad_return_addresses),
        T4(test_window),
        T4(test_user_walk_supervisor_page),
        T4(test_not_long_mode_and_capacity),
        T4(test_kpti_kernel_walk),
        T4(test_read_virt_and_cache),
        T4(test_page_straddling_slot_end),
    };
    const struct CMUnitTest tests5[] = {
        T5(test_user_stack_normal), T5(test_kernel_stack),        T5(test_cycles),
        T5(test_stack_into_mmio),   T5(test_ten_thousand_frames), T5(test_bad_return_addresses),
        T5(test_kpti_kernel_walk),  T5(test_read_virt_and_cache),
    };
    int fails = cmocka_run_group_tests_name("unwind_4level", tests4, NULL, NULL);
    fails += cmocka_run_group_tests_name("unwind_5level", tests5, NULL, NULL);
    return fails;
}
