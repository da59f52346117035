/* The frameless scan (guestwalk/frameless.h) on the machine code GCC emits with frame pointers
 * at -O1 and -O2 (frameless_funcs.c), at every instruction of every function, against the
 * position's true shape; on hand-written shapes the compiler emits elsewhere (callee-saved pushes
 * and a stack frame, a shrink-wrapped prologue, a tail call, a call that does not return, an
 * indirect jump, an endless loop); and end to end through the walker in guest memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>
#include <cmocka.h>

#include "guest_image.h"
#include "guestwalk/frameless.h"
#include "guestwalk/unwind.h"

void fl_call(unsigned long n);
void fl_call(unsigned long n)
{
    (void)n;
}

#define DECLARE(s)                                                                                 \
    void fl_spin_##s(unsigned long n);                                                             \
    void fl_sum_##s(const unsigned long *p, unsigned long n);                                      \
    void fl_framed_##s(unsigned long n);                                                           \
    void fl_end_##s(void);
DECLARE(o1)
DECLARE(o2)

/* Hand-written shapes; each label is where a test stops the scan. */
__asm__(".text\n"
        /* callee-saved pushes and a frame made with sub, two ways out */
        "fl_asm_pushes:\n"
        "  push %rbx\n"
        "fl_asm_pushes_1:\n"
        "  push %r12\n"
        "  sub $0x28, %rsp\n"
        "fl_asm_pushes_2:\n"
        "  test %rdi, %rdi\n"
        "  jne 1f\n"
        "  add $0x28, %rsp\n"
        "  pop %r12\n"
        "  pop %rbx\n"
        "  ret\n"
        "1:\n"
        "  lea 0x28(%rsp), %rsp\n"
        "  pop %r12\n"
        "fl_asm_pushes_3:\n"
        "  pop %rbx\n"
        "  ret\n"
        /* shrink-wrapped: an early return, then a frame linked and unlinked */
        "fl_asm_shrink:\n"
        "  test %rdi, %rdi\n"
        "  je 2f\n"
        "  push %rbp\n"
        "  mov %rsp, %rbp\n"
        "  call fl_call\n"
        "  pop %rbp\n"
        "2:\n"
        "  ret\n"
        /* a tail call into a frameless function */
        "fl_asm_tail:\n"
        "  push %rbx\n"
        "fl_asm_tail_1:\n"
        "  mov %rdi, %rbx\n"
        "  pop %rbx\n"
        "  jmp fl_asm_leaf\n"
        "fl_asm_leaf:\n"
        "  mov %rdi, %rax\n"
        "  ret\n"
        /* a call that does not return, followed by padding and another function's code */
        "fl_asm_noreturn:\n"
        "  push %rbx\n"
        "fl_asm_noreturn_1:\n"
        "  test %rdi, %rdi\n"
        "  jne 3f\n"
        "  call fl_call\n"
        "  nopl 0(%rax)\n"
        "  push %rbp\n"
        "  push %rbp\n"
        "  ret\n"
        "3:\n"
        "  pop %rbx\n"
        "  ret\n"
        /* stack realignment, a jump table, an endless loop: no answer */
        "fl_asm_realign:\n"
        "  and $-16, %rsp\n"
        "  ret\n"
        "fl_asm_switch:\n"
        "  jmp *(%rdi)\n"
        "fl_asm_loop:\n"
        "  jmp fl_asm_loop\n"
        "fl_asm_framed_body:\n"
        "  mov %rdi, %rax\n"
        "  leave\n"
        "  ret\n"
        "fl_asm_end:\n"
        "  ret\n");
extern const uint8_t fl_asm_pushes[], fl_asm_pushes_1[], fl_asm_pushes_2[], fl_asm_pushes_3[],
    fl_asm_shrink[], fl_asm_tail[], fl_asm_tail_1[], fl_asm_noreturn[], fl_asm_noreturn_1[],
    fl_asm_realign[], fl_asm_switch[], fl_asm_loop[], fl_asm_framed_body[], fl_asm_end[];

/* Host code as "guest" code: the bytes at va, bounded by the test's region. */
struct region {
    uint64_t lo, hi;
};

static size_t fetch_host(void *ctx, uint64_t va, uint8_t *dst, size_t len)
{
    const struct region *r = ctx;
    if (va < r->lo || va >= r->hi)
        return 0;
    size_t n = r->hi - va < len ? (size_t)(r->hi - va) : len;
    memcpy(dst, (const void *)(uintptr_t)va, n);
    return n;
}

static struct gw_leaf_decoder dec;

static int setup(void **state)
{
    (void)state;
    return gw_leaf_open(&dec, NULL);
}

static int teardown(void **state)
{
    (void)state;
    gw_leaf_close(&dec);
    return 0;
}

static enum gw_frame_shape scan(const void *at, const void *lo, const void *hi, uint32_t *depth)
{
    struct region r = {(uintptr_t)lo, (uintptr_t)hi};
    *depth = UINT32_MAX;
    return gw_frameless_scan(&dec, fetch_host, &r, (uintptr_t)at, depth);
}

/* Every instruction of a frameless leaf, up to its last ret: FRAMELESS at depth 0. */
static void check_leaf(const void *fn, const void *next)
{
    csh h;
    assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &h), CS_ERR_OK);
    cs_insn *insn = cs_malloc(h);
    const uint8_t *c = fn;
    size_t n = (size_t)((const uint8_t *)next - c);
    uint64_t addr = (uintptr_t)fn, last_ret = 0;
    while (cs_disasm_iter(h, &c, &n, &addr, insn))
        if (insn->id == X86_INS_RET)
            last_ret = insn->address;
    assert_true(last_ret > 0);
    c = fn;
    n = (size_t)((const uint8_t *)next - c);
    addr = (uintptr_t)fn;
    unsigned positions = 0;
    while (cs_disasm_iter(h, &c, &n, &addr, insn) && insn->address <= last_ret) {
        uint32_t depth;
        assert_int_equal(scan((const void *)(uintptr_t)insn->address, fn, next, &depth),
                         GW_SHAPE_FRAMELESS);
        assert_int_equal(depth, 0);
        positions++;
    }
    assert_true(positions >= 6);
    cs_free(insn, 1);
    cs_close(&h);
}

/* A function with a frame: before push rbp it is frameless (the scan balances the frame it links
 * and unlinks); right after the push it cannot say (the classifier's case); between the link and
 * the unlink it is FRAMED; after the unlink frameless again. */
static void check_framed(const void *fn, const void *next)
{
    csh h;
    assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &h), CS_ERR_OK);
    cs_insn *insn = cs_malloc(h);
    const uint8_t *c = fn;
    size_t n = (size_t)((const uint8_t *)next - c);
    uint64_t addr = (uintptr_t)fn;
    enum { BEFORE, PUSHED, LINKED, UNLINKED } where = BEFORE;
    unsigned framed = 0, after = 0;
    while (cs_disasm_iter(h, &c, &n, &addr, insn)) {
        uint32_t depth;
        enum gw_frame_shape got = scan((const void *)(uintptr_t)insn->address, fn, next, &depth);
        switch (where) {
        case BEFORE:
            assert_int_equal(got, GW_SHAPE_FRAMELESS);
            assert_int_equal(depth, 0);
            assert_true(insn->id == X86_INS_PUSH && insn->bytes[0] == 0x55);
            where = PUSHED;
            break;
        case PUSHED:
            assert_int_equal(got, GW_SHAPE_UNKNOWN); /* mov rbp, rsp */
            where = LINKED;
            break;
        case LINKED:
            assert_int_equal(got, GW_SHAPE_FRAMED);
            framed++;
            if (insn->id == X86_INS_LEAVE || (insn->id == X86_INS_POP && insn->bytes[0] == 0x5d))
                where = UNLINKED;
            break;
        case UNLINKED:
            assert_int_equal(got, GW_SHAPE_FRAMELESS);
            assert_int_equal(depth, 0);
            after++;
            break;
        }
        if (where == UNLINKED && insn->id == X86_INS_RET)
            break;
    }
    assert_int_equal(where, UNLINKED);
    assert_true(framed >= 3 && after >= 1);
    cs_free(insn, 1);
    cs_close(&h);
}

static void test_gcc_o1(void **state)
{
    (void)state;
    check_leaf((const void *)fl_spin_o1, (const void *)fl_sum_o1);
    check_leaf((const void *)fl_sum_o1, (const void *)fl_framed_o1);
    check_framed((const void *)fl_framed_o1, (const void *)fl_end_o1);
}

static void test_gcc_o2(void **state)
{
    (void)state;
    check_leaf((const void *)fl_spin_o2, (const void *)fl_sum_o2);
    check_leaf((const void *)fl_sum_o2, (const void *)fl_framed_o2);
    check_framed((const void *)fl_framed_o2, (const void *)fl_end_o2);
}

#define expect(at, shape, depth) expect_at(#at, at, shape, depth)
static void expect_at(const char *name, const uint8_t *at, enum gw_frame_shape shape,
                      uint32_t want_depth)
{
    uint32_t depth;
    enum gw_frame_shape got = scan(at, fl_asm_pushes, fl_asm_end + 1, &depth);
    if (got != shape || (shape == GW_SHAPE_FRAMELESS && depth != want_depth))
        fail_msg("%s: shape %d depth %u, expected %d depth %u", name, got, depth, shape,
                 want_depth);
}

static void test_shapes(void **state)
{
    (void)state;
    expect(fl_asm_pushes, GW_SHAPE_FRAMELESS, 0);
    expect(fl_asm_pushes_1, GW_SHAPE_FRAMELESS, 8);
    expect(fl_asm_pushes_2, GW_SHAPE_FRAMELESS, 0x38); /* both exits agree */
    expect(fl_asm_pushes_3, GW_SHAPE_FRAMELESS, 8);
    expect(fl_asm_shrink, GW_SHAPE_FRAMELESS, 0);
    expect(fl_asm_tail, GW_SHAPE_FRAMELESS, 0);
    expect(fl_asm_tail_1, GW_SHAPE_FRAMELESS, 8);
    /* Past the call that does not return lies padding, then code that would say 24. */
    expect(fl_asm_noreturn_1, GW_SHAPE_FRAMELESS, 8);
    expect(fl_asm_realign, GW_SHAPE_UNKNOWN, 0);
    expect(fl_asm_switch, GW_SHAPE_UNKNOWN, 0);
    expect(fl_asm_loop, GW_SHAPE_UNKNOWN, 0);
    expect(fl_asm_framed_body, GW_SHAPE_FRAMED, 0);
}

/* Unreadable or undecodable code: no answer, never a read outside the region. */
static void test_unreadable(void **state)
{
    (void)state;
    uint32_t depth;
    assert_int_equal(scan(fl_asm_pushes, fl_asm_pushes, fl_asm_pushes, &depth), GW_SHAPE_UNKNOWN);
    /* The region ends before the ret. */
    assert_int_equal(scan(fl_asm_pushes_3, fl_asm_pushes, fl_asm_pushes_3 + 1, &depth),
                     GW_SHAPE_UNKNOWN);
    static const uint8_t bad[] = {0x0f, 0xff, 0xff, 0xff, 0x06, 0x06};
    assert_int_equal(scan(bad, bad, bad + sizeof(bad), &depth), GW_SHAPE_UNKNOWN);
}

static void test_after_call(void **state)
{
    (void)state;
    static const struct {
        uint8_t b[8];
        bool call;
    } cases[] = {
        {{0x90, 0x90, 0x90, 0xe8, 0x10, 0x20, 0x30, 0x40}, true},  /* call rel32 */
        {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0}, true},  /* call rax */
        {{0x90, 0x90, 0x90, 0x90, 0x90, 0x41, 0xff, 0xd3}, true},  /* call r11 */
        {{0x90, 0x90, 0xff, 0x15, 0x10, 0x20, 0x30, 0x40}, true},  /* call [rip + d32] */
        {{0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x50, 0x08}, true},  /* call [rax + 8] */
        {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x13}, true},  /* call [rbx] */
        {{0x90, 0x90, 0x90, 0x90, 0xff, 0x54, 0x24, 0x08}, true},  /* call [rsp + 8] */
        {{0x90, 0x90, 0x90, 0x90, 0x90, 0x48, 0x89, 0xc7}, false}, /* mov rdi, rax */
        {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xe0}, false}, /* jmp rax */
        {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x14}, false}, /* ff 14 needs a SIB */
        {{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (gw_after_call(cases[i].b, 8) != cases[i].call)
            fail_msg("case %zu: expected %s", i, cases[i].call ? "a call" : "no call");
    }
    assert_false(gw_after_call(cases[0].b, 4)); /* too few bytes for the e8 form */
}

/* End to end: the -O1 leaf copied into guest memory, interrupted in its loop; its caller's
 * return address is at [rsp], right after a call, and RBP still holds the caller's frame. */
#define CODE_VA  0x500000ull
#define STACK_LO 0x7ffd00000000ull
#define R1       (CODE_VA + 0x805) /* after the call at CODE_VA + 0x800 */
#define R2       0x405678ull
#define R3       0x409abcull
#define FP1      (STACK_LO + 0x1000)
#define FP2      (STACK_LO + 0x1100)

static void test_walk(void **state)
{
    (void)state;
    struct gimg g;
    struct gw_walker w;
    assert_int_equal(gimg_init(&g, false), 0);
    assert_int_equal(gimg_map_fresh(&g, CODE_VA, 4096, GIMG_P | GIMG_US), 0);
    assert_int_equal(gimg_map_fresh(&g, STACK_LO, 0x4000, GIMG_USER_RW | GIMG_XD), 0);
    size_t len =
        (size_t)((const uint8_t *)(uintptr_t)fl_sum_o1 - (const uint8_t *)(uintptr_t)fl_spin_o1);
    assert_true(len > 16 && len < 0x700);
    gimg_write(&g, CODE_VA + 0x100, (const void *)(uintptr_t)fl_spin_o1, len);
    const uint8_t call[5] = {0xe8, 0, 0, 0, 0};
    gimg_write(&g, CODE_VA + 0x800, call, sizeof(call));
    gimg_write_u64(&g, FP1, FP2);
    gimg_write_u64(&g, FP1 + 8, R2);
    gimg_write_u64(&g, FP2, 0);
    gimg_write_u64(&g, FP2 + 8, R3);
    uint64_t rsp = STACK_LO + 0x800;
    gimg_write_u64(&g, rsp, R1);
    assert_int_equal(gw_walker_init(&w, &g.mem, NULL, NULL), 0);
    uint64_t pcs[16];
    struct gw_stack st = GW_STACK_INIT(pcs, 16);
    uint64_t rip = CODE_VA + 0x100 + len - 3; /* inside the loop, before its ret */
    struct gw_snapshot c = gimg_cpu(&g, rip, rsp, FP1, 3);
    gw_walker_begin(&w, &c);
    gw_unwind(&w, &st);
    assert_int_equal(st.count, 4);
    assert_int_equal(st.pc[1], R1);
    assert_int_equal(st.pc[2], R2);
    assert_int_equal(st.pc[3], R3);
    assert_int_equal(st.leaf, GW_LEAF_FRAMELESS);

    /* A stack slot that is not right after a call is not taken for the caller. */
    gimg_write_u64(&g, rsp, CODE_VA + 0x900);
    gw_walker_begin(&w, &c);
    gw_unwind(&w, &st);
    assert_int_equal(st.count, 3);
    assert_int_equal(st.pc[1], R2);
    assert_int_equal(st.leaf, GW_LEAF_NONE);

    /* Without leaf repair the caller is lost: the hazard this fixes. */
    gimg_write_u64(&g, rsp, R1);
    w.cfg.no_leaf_repair = true;
    gw_walker_begin(&w, &c);
    gw_unwind(&w, &st);
    assert_int_equal(st.count, 3);
    gw_walker_fini(&w);
    gimg_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcc_o1),     cmocka_unit_test(test_gcc_o2),
        cmocka_unit_test(test_shapes),     cmocka_unit_test(test_unreadable),
        cmocka_unit_test(test_after_call), cmocka_unit_test(test_walk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
