/* Leaf-frame repair at every prologue/epilogue position of real compiled functions (the bytes of
 * leaf_funcs.c, built with and without CET), copied into guest memory; positions are found by
 * decoding those bytes with capstone here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>
#include <cmocka.h>

#include "guest_image.h"
#include "guestwalk/unwind.h"

int gwt_func_plain(int x);
int gwt_func_cet(int x);

/* Called by the compiled functions; never run by this test. */
__attribute__((noinline)) int gwt_sink(int x);
int gwt_sink(int x)
{
    return x ^ 0x5a;
}

#define CODE_VA  0x500000ull
#define FUNC_LEN 128 /* bytes copied per function: covers gwt_func in both variants */
#define STACK_LO 0x7ffd00000000ull
#define R1       0x401234ull /* return address into the caller */
#define R2       0x405678ull
#define R3       0x409abcull

/* Instruction offsets inside one compiled function. */
struct positions {
    int endbr, push, mov, body, ret, tail_jmp;
};

struct fixture {
    struct gimg g;
    struct gw_walker w;
    struct positions plain, cet;
    uint64_t plain_va, cet_va;
};

static void find_positions(const uint8_t *code, struct positions *p)
{
    csh h;
    assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &h), CS_ERR_OK);
    cs_insn *insn = cs_malloc(h);
    const uint8_t *c = code;
    size_t n = FUNC_LEN;
    uint64_t addr = 0;
    *p = (struct positions){-1, -1, -1, -1, -1, -1};
    int prev_id = -1;
    bool prev_pop_rbp = false;
    while (cs_disasm_iter(h, &c, &n, &addr, insn)) {
        int off = (int)insn->address;
        bool pop_rbp = insn->id == X86_INS_POP && insn->size == 1 && insn->bytes[0] == 0x5d;
        if (insn->id == X86_INS_ENDBR64 && p->endbr < 0 && off == 0)
            p->endbr = off;
        if (insn->id == X86_INS_PUSH && insn->bytes[0] == 0x55 && p->push < 0)
            p->push = off;
        if (insn->id == X86_INS_MOV && p->push >= 0 && p->mov < 0 && prev_id == X86_INS_PUSH)
            p->mov = off;
        if (insn->id == X86_INS_CALL && p->body < 0)
            p->body = off;
        if (insn->id == X86_INS_RET && prev_pop_rbp && p->ret < 0)
            p->ret = off;
        if (insn->id == X86_INS_JMP && prev_pop_rbp && p->tail_jmp < 0)
            p->tail_jmp = off;
        prev_id = (int)insn->id;
        prev_pop_rbp = pop_rbp;
        if (p->ret >= 0 && p->tail_jmp >= 0)
            break;
    }
    cs_free(insn, 1);
    cs_close(&h);
    /* The compiler must have produced every position the test exercises. */
    assert_true(p->push >= 0 && p->mov == p->push + 1 && p->body > p->mov && p->ret > 0 &&
                p->tail_jmp > 0);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f || gimg_init(&f->g, false) != 0)
        return -1;
    if (gimg_map_fresh(&f->g, CODE_VA, 4096, GIMG_P | GIMG_US) != 0 ||
        gimg_map_fresh(&f->g, STACK_LO, 0x4000, GIMG_USER_RW | GIMG_XD) != 0)
        return -1;
    f->plain_va = CODE_VA + 0x100;
    f->cet_va = CODE_VA + 0x300;
    gimg_write(&f->g, f->plain_va, (const void *)(uintptr_t)gwt_func_plain, FUNC_LEN);
    gimg_write(&f->g, f->cet_va, (const void *)(uintptr_t)gwt_func_cet, FUNC_LEN);
    find_positions((const uint8_t *)(uintptr_t)gwt_func_plain, &f->plain);
    find_positions((const uint8_t *)(uintptr_t)gwt_func_cet, &f->cet);
    assert_int_equal(f->plain.endbr, -1);
    assert_int_equal(f->cet.endbr, 0);
    assert_int_equal(f->cet.push, 4);
    if (gw_walker_init(&f->w, &f->g.mem, NULL, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    gw_walker_fini(&f->w);
    gimg_free(&f->g);
    free(f);
    return 0;
}

/* The caller's frame chain, above the interrupted function's slots: fp1 -> fp2 -> end. */
#define FP1 (STACK_LO + 0x1000)
#define FP2 (STACK_LO + 0x1100)

static void write_caller_chain(struct gimg *g)
{
    gimg_write_u64(g, FP1, FP2);
    gimg_write_u64(g, FP1 + 8, R2);
    gimg_write_u64(g, FP2, 0);
    gimg_write_u64(g, FP2 + 8, R3);
}

/* Machine state at `rip` of the interrupted function, which was called from R1 with the caller's
 * frame at FP1. `linked`: the function's own frame record exists (rsp points at saved rbp).
 * `pushed`: rbp was pushed but rbp not yet moved. Returns the walk's stack. */
enum state { AT_ENTRY, AFTER_PUSH, IN_BODY, UNLINKED };

static void walk_at(struct fixture *f, uint64_t rip, enum state s, bool repair, struct gw_stack *st)
{
    struct gimg *g = &f->g;
    write_caller_chain(g);
    uint64_t ret_slot = STACK_LO + 0x800; /* where the call pushed R1 */
    gimg_write_u64(g, ret_slot, R1);
    gimg_write_u64(g, ret_slot - 8, FP1); /* saved rbp (valid once pushed) */
    uint64_t rsp, rbp;
    switch (s) {
    case AT_ENTRY:
    case UNLINKED: /* after pop rbp / leave: same shape as at entry */
        rsp = ret_slot;
        rbp = FP1;
        break;
    case AFTER_PUSH:
        rsp = ret_slot - 8;
        rbp = FP1;
        break;
    case IN_BODY:
    default:
        rsp = ret_slot - 8 - 0x20; /* some locals below the frame record */
        rbp = ret_slot - 8;
        break;
    }
    struct gw_config cfg = {.no_leaf_repair = !repair};
    f->w.cfg.no_leaf_repair = cfg.no_leaf_repair;
    struct gw_snapshot c = gimg_cpu(g, rip, rsp, rbp, 3);
    gw_walker_begin(&f->w, &c);
    gw_unwind(&f->w, st);
}

static void expect_full(const struct gw_stack *st, uint64_t rip, enum gw_leaf leaf)
{
    assert_int_equal(st->count, 4);
    assert_int_equal(st->pc[0], rip);
    assert_int_equal(st->pc[1], R1);
    assert_int_equal(st->pc[2], R2);
    assert_int_equal(st->pc[3], R3);
    assert_int_equal(st->stop, GW_STOP_CHAIN_END);
    assert_int_equal(st->leaf, leaf);
}

static void check_variant(struct fixture *f, uint64_t base, const struct positions *p)
{
    uint64_t pcs[16];
    struct gw_stack st = GW_STACK_INIT(pcs, 16);

    walk_at(f, base + p->push, AT_ENTRY, true, &st);
    expect_full(&st, base + p->push, GW_LEAF_ENTRY);
    walk_at(f, base + p->mov, AFTER_PUSH, true, &st);
    expect_full(&st, base + p->mov, GW_LEAF_AFTER_PUSH);
    walk_at(f, base + p->body, IN_BODY, true, &st);
    expect_full(&st, base + p->body, GW_LEAF_NONE);
    walk_at(f, base + p->ret, UNLINKED, true, &st);
    expect_full(&st, base + p->ret, GW_LEAF_RET);
    walk_at(f, base + p->tail_jmp, UNLINKED, true, &st);
    expect_full(&st, base + p->tail_jmp, GW_LEAF_AFTER_POP);
    if (p->endbr >= 0) {
        walk_at(f, base + p->endbr, AT_ENTRY, true, &st);
        expect_full(&st, base + p->endbr, GW_LEAF_ENTRY_ENDBR);
    }

    /* Without repair the caller (R1) is lost at every unlinked position: the hazard. */
    walk_at(f, base + p->push, AT_ENTRY, false, &st);
    assert_int_equal(st.count, 3);
    assert_int_equal(st.pc[1], R2);
    walk_at(f, base + p->ret, UNLINKED, false, &st);
    assert_int_equal(st.count, 3);
    assert_int_equal(st.pc[1], R2);
    /* ... and the linked position never needed it. */
    walk_at(f, base + p->body, IN_BODY, false, &st);
    expect_full(&st, base + p->body, GW_LEAF_NONE);
}

static void test_repair_plain(void **state)
{
    struct fixture *f = *state;
    check_variant(f, f->plain_va, &f->plain);
}

static void test_repair_cet(void **state)
{
    struct fixture *f = *state;
    check_variant(f, f->cet_va, &f->cet);
}

/* A repair whose stack slot holds something that cannot be a return address is dropped. */
static void test_implausible_repair_dropped(void **state)
{
    struct fixture *f = *state;
    uint64_t pcs[16];
    struct gw_stack st = GW_STACK_INIT(pcs, 16);
    walk_at(f, f->plain_va + f->plain.push, AT_ENTRY, true, &st);
    gimg_write_u64(&f->g, STACK_LO + 0x800, 0xffffffff81000000ull); /* kernel address */
    struct gw_snapshot c = gimg_cpu(&f->g, f->plain_va + f->plain.push, STACK_LO + 0x800, FP1, 3);
    gw_walker_begin(&f->w, &c);
    gw_unwind(&f->w, &st);
    assert_int_equal(st.leaf, GW_LEAF_NONE);
    assert_int_equal(st.count, 3);
    assert_int_equal(st.pc[1], R2);
}

/* RIP on an unmapped page: frame 0 is still the exact PC, no repair, the walk goes on. */
static void test_code_unmapped(void **state)
{
    struct fixture *f = *state;
    uint64_t pcs[16];
    struct gw_stack st = GW_STACK_INIT(pcs, 16);
    write_caller_chain(&f->g);
    struct gw_snapshot c = gimg_cpu(&f->g, 0x900000, STACK_LO + 0x800, FP1, 3);
    f->w.cfg.no_leaf_repair = false;
    gw_walker_begin(&f->w, &c);
    gw_unwind(&f->w, &st);
    assert_int_equal(st.count, 3);
    assert_int_equal(st.pc[0], 0x900000);
    assert_int_equal(st.leaf, GW_LEAF_NONE);
}

/* push rbp as the last byte of a page whose successor is unmapped is still recognised. */
static void test_code_at_page_end(void **state)
{
    struct fixture *f = *state;
    uint64_t pcs[16];
    struct gw_stack st = GW_STACK_INIT(pcs, 16);
    uint8_t push = 0x55;
    gimg_write(&f->g, CODE_VA + 4095, &push, 1);
    write_caller_chain(&f->g);
    gimg_write_u64(&f->g, STACK_LO + 0x800, R1);
    struct gw_snapshot c = gimg_cpu(&f->g, CODE_VA + 4095, STACK_LO + 0x800, FP1, 3);
    f->w.cfg.no_leaf_repair = false;
    gw_walker_begin(&f->w, &c);
    gw_unwind(&f->w, &st);
    expect_full(&st, CODE_VA + 4095, GW_LEAF_ENTRY);
}

/* Byte patterns beyond what the compiler emitted above. */
static void test_classify_bytes(void **state)
{
    struct fixture *f = *state;
    struct gw_leaf_decoder *d = &f->w.dec;
    const uint8_t ret_imm[] = {0xc2, 0x10, 0x00}, rep_ret[] = {0xf3, 0xc3};
    const uint8_t push[] = {0x55}, mov_8b[] = {0x48, 0x8b, 0xec}, mov_89[] = {0x48, 0x89, 0xe5};
    const uint8_t jmp[] = {0xe9, 0, 0, 0, 0}, endbr_nop[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x90};
    const uint8_t endbr_push[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55}, push_r13[] = {0x41, 0x55};
    assert_int_equal(gw_leaf_classify(d, ret_imm, sizeof(ret_imm), 0, -1), GW_LEAF_RET);
    assert_int_equal(gw_leaf_classify(d, rep_ret, sizeof(rep_ret), 0, -1), GW_LEAF_RET);
    assert_int_equal(gw_leaf_classify(d, push, 1, 0, -1), GW_LEAF_ENTRY);
    assert_int_equal(gw_leaf_classify(d, push_r13, 2, 0, -1), GW_LEAF_NONE);
    assert_int_equal(gw_leaf_classify(d, mov_8b, 3, 0, 0x55), GW_LEAF_AFTER_PUSH);
    assert_int_equal(gw_leaf_classify(d, mov_89, 3, 0, 0x55), GW_LEAF_AFTER_PUSH);
    assert_int_equal(gw_leaf_classify(d, mov_89, 3, 0, -1), GW_LEAF_NONE);
    assert_int_equal(gw_leaf_classify(d, jmp, 5, 0, 0x5d), GW_LEAF_AFTER_POP);
    assert_int_equal(gw_leaf_classify(d, jmp, 5, 0, 0x90), GW_LEAF_NONE);
    assert_int_equal(gw_leaf_classify(d, endbr_nop, 5, 0, -1), GW_LEAF_NONE);
    assert_int_equal(gw_leaf_classify(d, endbr_push, 5, 0, -1), GW_LEAF_ENTRY_ENDBR);
    assert_int_equal(gw_leaf_classify(d, endbr_push, 4, 0, -1), GW_LEAF_NONE); /* truncated */
    assert_int_equal(gw_leaf_classify(d, endbr_push, 2, 0, -1), GW_LEAF_NONE);
    assert_int_equal(gw_leaf_classify(d, push, 0, 0, -1), GW_LEAF_NONE);
    assert_int_equal(gw_leaf_ret_offset(GW_LEAF_AFTER_PUSH), 8);
    assert_int_equal(gw_leaf_ret_offset(GW_LEAF_RET), 0);
    assert_string_equal(gw_leaf_str(GW_LEAF_ENTRY_ENDBR), "at endbr64; push rbp");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_repair_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repair_cet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_implausible_repair_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_code_unmapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_code_at_page_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_classify_bytes, setup, teardown),
    };
    return cmocka_run_group_tests_name("leaf_repair", tests, NULL, NULL);
}
