/* The ORC decoder and unwinder on synthetic tables and stacks (docs/orc.md): the three entry
 * layouts bit by bit; lookups against a linear search across 256-byte block boundaries, with
 * unsorted input and terminators sharing an IP with real entries; walks through ordinary frames,
 * a frame-pointer frame, the IRQ stack (SP_INDIRECT), a pt_regs frame of an interrupt taken in
 * the kernel, the END_OF_STACK of a kernel thread and the user entry frame of a system call
 * (its user RIP/RSP/RBP); and hostile stacks and tables: a frame that does not move, an
 * indirect loop, a PC without an entry, a CFA in user memory, unmapped stacks, a depth cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/linux/orc.h"
#include "guestos/linux/orc_unwind.h"
#include "guestwalk/tests/guest_image.h"

#define T      0xffffffff81000000ull /* kernel text */
#define TASK_S 0xffffc90000010000ull /* a task stack: [TASK_S, TASK_S + 16K) */
#define IRQ_S  0xffffc90000100000ull /* the IRQ stack, above it */

/* 6.5's packing (orc.c): sp_reg:4 bp_reg:4 type:3 signal:1. */
static void put65(uint8_t *raw, int16_t sp_off, int16_t bp_off, unsigned sp_reg, unsigned bp_reg,
                  unsigned type, unsigned signal)
{
    unsigned w = sp_reg | bp_reg << 4 | type << 8 | signal << 11;
    raw[0] = (uint8_t)sp_off, raw[1] = (uint8_t)((uint16_t)sp_off >> 8);
    raw[2] = (uint8_t)bp_off, raw[3] = (uint8_t)((uint16_t)bp_off >> 8);
    raw[4] = (uint8_t)w, raw[5] = (uint8_t)(w >> 8);
}

static struct lx_orc_layout l65(void)
{
    struct lx_orc_layout l;
    char why[96];
    assert_true(lx_orc_layout_from_release("6.12.9-amd64", &l, why, sizeof(why)));
    return l;
}

static void test_layouts(void **state)
{
    (void)state;
    struct lx_orc_layout l;
    char why[96];
    /* 6.1: sp_reg SP, bp_reg PREV_SP, type REGS (1), end clear; then an end entry. */
    assert_true(lx_orc_layout_from_release("6.1.0-27-amd64", &l, why, sizeof(why)));
    uint8_t raw[6] = {0x10, 0x00, 0xf0, 0xff, 0x15, 0x01};
    struct lx_orc_entry e = lx_orc_decode(&l, raw);
    assert_int_equal(e.sp_offset, 16);
    assert_int_equal(e.bp_offset, -16);
    assert_int_equal(e.sp_reg, LX_ORC_REG_SP);
    assert_int_equal(e.bp_reg, LX_ORC_REG_PREV_SP);
    assert_int_equal(e.type, LX_ORC_TYPE_REGS);
    assert_int_equal(e.signal, 1); /* derived before 6.3: after a regs frame the IP is exact */
    uint8_t end[6] = {0, 0, 0, 0, 0x00, 0x04};
    assert_int_equal(lx_orc_decode(&l, end).type, LX_ORC_TYPE_END_OF_STACK);
    uint8_t undef[6] = {0, 0, 0, 0, 0x00, 0x00};
    assert_int_equal(lx_orc_decode(&l, undef).type, LX_ORC_TYPE_UNDEFINED);
    uint8_t call[6] = {8, 0, 0, 0, 0x05, 0x00};
    e = lx_orc_decode(&l, call);
    assert_int_equal(e.type, LX_ORC_TYPE_CALL);
    assert_int_equal(e.signal, 0);
    /* 6.3: signal at bit 10, end at 11. */
    assert_true(lx_orc_layout_from_release("6.3.13", &l, why, sizeof(why)));
    uint8_t s63[6] = {8, 0, 0, 0, 0x05, 0x04};
    e = lx_orc_decode(&l, s63);
    assert_int_equal(e.type, LX_ORC_TYPE_CALL);
    assert_int_equal(e.signal, 1);
    uint8_t end63[6] = {0, 0, 0, 0, 0x00, 0x08};
    assert_int_equal(lx_orc_decode(&l, end63).type, LX_ORC_TYPE_END_OF_STACK);
    /* 6.5+: type 3 bits (REGS_PARTIAL 4), signal at 11; 5..7 are no type. */
    l = l65();
    put65(raw, 0, 0, LX_ORC_REG_SP, 0, LX_ORC_TYPE_REGS_PARTIAL, 1);
    e = lx_orc_decode(&l, raw);
    assert_int_equal(e.type, LX_ORC_TYPE_REGS_PARTIAL);
    assert_int_equal(e.signal, 1);
    put65(raw, 0, 0, LX_ORC_REG_SP, 0, 7, 0);
    assert_int_equal(lx_orc_decode(&l, raw).type, LX_ORC_TYPE_UNDEFINED);
    put65(raw, 0, 0, 0, 0, LX_ORC_TYPE_END_OF_STACK, 0);
    assert_int_equal(lx_orc_decode(&l, raw).type, LX_ORC_TYPE_END_OF_STACK);
    /* Releases that do not tell. */
    assert_false(lx_orc_layout_from_release("6.4.16", &l, why, sizeof(why)));
    assert_false(lx_orc_layout_from_release("4.9.0", &l, why, sizeof(why)));
    assert_false(lx_orc_layout_from_release("linux", &l, why, sizeof(why)));
    assert_true(lx_orc_layout_from_release("5.10.0-33-amd64", &l, why, sizeof(why)));
    assert_int_equal(l.end, 10);
}

/* Debian's 7.2 numbers the registers otherwise (its orc_types.h): the same bit layout as 6.5+,
 * decoded through LX_ORC_REGS_7 to hvprof's numbers; a table of typical CALL entries (SP-based
 * CFA, frame pointer at PREV_SP) is plausible in one numbering only. */
static void test_register_numbering(void **state)
{
    (void)state;
    struct lx_orc_layout six = l65(), seven = l65();
    seven.regs = LX_ORC_REGS_7;
    static const struct {
        unsigned raw;
        uint8_t six, seven;
    } regs[] = {
        {0, LX_ORC_REG_UNDEFINED, LX_ORC_REG_UNDEFINED}, {1, LX_ORC_REG_PREV_SP, LX_ORC_REG_AX},
        {2, LX_ORC_REG_DX, LX_ORC_REG_DX},               {3, LX_ORC_REG_DI, LX_ORC_REG_SP},
        {4, LX_ORC_REG_BP, LX_ORC_REG_BP},               {5, LX_ORC_REG_SP, LX_ORC_REG_DI},
        {6, LX_ORC_REG_R10, LX_ORC_REG_R10},             {7, LX_ORC_REG_R13, LX_ORC_REG_R13},
        {8, LX_ORC_REG_BP_INDIRECT, LX_ORC_REG_PREV_SP}, {9, LX_ORC_REG_SP_INDIRECT, LX_ORC_REG_SP_INDIRECT},
        {10, LX_ORC_REG_INVALID, LX_ORC_REG_BP_INDIRECT}, {15, LX_ORC_REG_INVALID, LX_ORC_REG_INVALID},
    };
    for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
        uint8_t raw[6];
        put65(raw, 8, -16, (uint8_t)regs[i].raw, (uint8_t)regs[i].raw, LX_ORC_TYPE_CALL, 0);
        assert_int_equal(lx_orc_decode(&six, raw).sp_reg, regs[i].six);
        assert_int_equal(lx_orc_decode(&seven, raw).sp_reg, regs[i].seven);
        assert_int_equal(lx_orc_decode(&seven, raw).bp_reg, regs[i].seven);
    }
    /* 7.2's common entry: sp_reg 3 (SP), bp_reg 8 (PREV_SP). */
    enum { N = 64 };
    int32_t rel[N];
    uint8_t raw[N * 6];
    const uint64_t ip_va = 0xffffffff82000000ull;
    for (size_t i = 0; i < N; i++) {
        rel[i] = (int32_t)(int64_t)(T + 16 * i - (ip_va + 4 * i));
        put65(raw + 6 * i, 16, -16, 3, 8, LX_ORC_TYPE_CALL, 0);
    }
    char why[96];
    struct lx_orc_table t;
    assert_int_equal(
        lx_orc_table_build(&t, rel, ip_va, raw, N, &six, T, T + (64 << 20), why, sizeof(why)), 0);
    assert_int_equal(t.bad, N);
    lx_orc_table_free(&t);
    assert_int_equal(
        lx_orc_table_build(&t, rel, ip_va, raw, N, &seven, T, T + (64 << 20), why, sizeof(why)),
        0);
    assert_int_equal(t.bad, 0);
    assert_int_equal(t.e[0].sp_reg, LX_ORC_REG_SP);
    assert_int_equal(t.e[0].bp_reg, LX_ORC_REG_PREV_SP);
    lx_orc_table_free(&t);
}

/* A table from (ip, entry) pairs in the order given. */
struct spec {
    uint64_t ip;
    int16_t sp_off, bp_off;
    uint8_t sp_reg, bp_reg, type, signal;
};

static void build(struct lx_orc_table *t, const struct spec *s, size_t n)
{
    const uint64_t ip_va = 0xffffffff82000000ull;
    int32_t *rel = calloc(n, 4);
    uint8_t *raw = calloc(n, 6);
    assert_non_null(rel);
    assert_non_null(raw);
    for (size_t i = 0; i < n; i++) {
        rel[i] = (int32_t)(int64_t)(s[i].ip - (ip_va + 4 * i));
        put65(raw + 6 * i, s[i].sp_off, s[i].bp_off, s[i].sp_reg, s[i].bp_reg, s[i].type,
              s[i].signal);
    }
    struct lx_orc_layout l = l65();
    char why[96];
    assert_int_equal(
        lx_orc_table_build(t, rel, ip_va, raw, n, &l, T, T + (64 << 20), why, sizeof(why)), 0);
    free(rel);
    free(raw);
}

static void test_lookup(void **state)
{
    (void)state;
    enum { N = 3000 };
    struct spec *s = calloc(N + 2, sizeof(*s));
    assert_non_null(s);
    uint64_t ip = T;
    srand(7);
    for (size_t i = 0; i < N; i++) {
        ip += (uint64_t)(1 + rand() % 700); /* gaps below and above a 256-byte block */
        s[i] = (struct spec){.ip = ip,
                             .sp_off = (int16_t)(i % 4000),
                             .sp_reg = LX_ORC_REG_SP,
                             .type = LX_ORC_TYPE_CALL};
    }
    /* A terminator sharing an IP with a real entry, listed first (scripts/sorttable's order):
     * the real entry applies. */
    s[N] = (struct spec){.ip = s[100].ip, .type = LX_ORC_TYPE_UNDEFINED};
    struct spec *shuffled = calloc(N + 1, sizeof(*s));
    assert_non_null(shuffled);
    shuffled[0] = s[N];
    for (size_t i = 0; i < N; i++)
        shuffled[1 + (i * 7919) % N] = s[i]; /* 7919 is prime: a permutation of 0..N-1 */
    struct lx_orc_table t;
    build(&t, shuffled, N + 1);
    assert_int_equal(t.n, N + 1);
    assert_int_equal(t.lo, s[0].ip);
    assert_null(lx_orc_find(&t, s[0].ip - 1));
    assert_null(lx_orc_find(&t, s[N - 1].ip + 1));
    for (uint64_t a = s[0].ip; a <= s[N - 1].ip; a += 3) {
        size_t want = 0;
        while (want + 1 < N && s[want + 1].ip <= a)
            want++;
        const struct lx_orc_entry *e = lx_orc_find(&t, a);
        assert_non_null(e);
        assert_int_equal(e->sp_offset, s[want].sp_off);
        assert_int_equal(e->type, LX_ORC_TYPE_CALL);
    }
    lx_orc_table_free(&t);
    free(s);
    free(shuffled);
}

/* The guest: a task stack and an IRQ stack, mapped supervisor-only, and the functions of the
 * table below. */
enum {
    F_TERM = 0x000,
    F_LEAF = 0x100,     /* push rbp at +0x4, mov rbp,rsp at +0x8 */
    F_BODY = 0x200,     /* a frame of 24 bytes */
    F_IRQENTRY = 0x300, /* pt_regs at rsp */
    F_ONIRQ = 0x400,    /* on the IRQ stack: the interrupted sp in its top slot */
    F_FORK = 0x500,     /* ret_from_fork */
    F_SYSCALL = 0x600,  /* entry_SYSCALL_64 after the pt_regs push */
    F_SPIN = 0x700,     /* hostile: a frame that does not move */
    F_LOOP = 0x800,     /* hostile: an indirect CFA that leads back */
    F_USERCFA = 0x900,  /* hostile: a CFA in user memory */
    F_THUNK = 0xa00,    /* a retpoline thunk: ORC marks it as an end */
    F_END = 0xb00,
};

static const struct spec table[] = {
    {T + F_TERM, 0, 0, 0, 0, LX_ORC_TYPE_UNDEFINED, 0},
    {T + F_LEAF, 8, 0, LX_ORC_REG_SP, 0, LX_ORC_TYPE_CALL, 0},
    {T + F_LEAF + 4, 16, -16, LX_ORC_REG_SP, LX_ORC_REG_PREV_SP, LX_ORC_TYPE_CALL, 0},
    {T + F_LEAF + 8, 16, -16, LX_ORC_REG_BP, LX_ORC_REG_PREV_SP, LX_ORC_TYPE_CALL, 0},
    {T + F_BODY, 32, 0, LX_ORC_REG_SP, 0, LX_ORC_TYPE_CALL, 0},
    {T + F_IRQENTRY, 0, 0, LX_ORC_REG_SP, 0, LX_ORC_TYPE_REGS, 1},
    {T + F_ONIRQ, 8, 0, LX_ORC_REG_SP_INDIRECT, 0, LX_ORC_TYPE_CALL, 0},
    {T + F_FORK, 0, 0, 0, 0, LX_ORC_TYPE_END_OF_STACK, 0},
    {T + F_SYSCALL, 0, 0, LX_ORC_REG_SP, 0, LX_ORC_TYPE_REGS, 1},
    {T + F_SPIN, 0, 0, LX_ORC_REG_SP, 0, LX_ORC_TYPE_CALL, 0},
    {T + F_LOOP, 0, 0, LX_ORC_REG_SP_INDIRECT, 0, LX_ORC_TYPE_CALL, 0},
    {T + F_USERCFA, 0x7000, 0, LX_ORC_REG_BP, 0, LX_ORC_TYPE_CALL, 0},
    {T + F_THUNK, 0, 0, 0, 0, LX_ORC_TYPE_END_OF_STACK, 0},
    {T + F_END, 0, 0, 0, 0, LX_ORC_TYPE_UNDEFINED, 0},
};

struct fx {
    struct gimg g;
    struct gw_walker w;
    struct lx_orc o;
    uint64_t pc[128];
    struct gw_stack st;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(gimg_init(&f->g, false), 0);
    assert_int_equal(gimg_map_fresh(&f->g, TASK_S, 16384, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, IRQ_S, 16384, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, T, 4096, GIMG_KERN_RW), 0); /* code, for call bytes */
    struct hv_err err;
    assert_int_equal(gw_walker_init(&f->w, &f->g.mem, NULL, &err), 0);
    f->o.layout = l65();
    build(&f->o.vmlinux, table, sizeof(table) / sizeof(table[0]));
    f->st = GW_STACK_INIT(f->pc, 128);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    lx_orc_table_free(&f->o.vmlinux);
    gw_walker_fini(&f->w);
    gimg_free(&f->g);
    free(f);
    return 0;
}

static unsigned unwind(struct fx *f, uint64_t rip, uint64_t rsp, uint64_t rbp)
{
    struct gw_snapshot s = gimg_cpu(&f->g, rip, rsp, rbp, 0);
    gw_walker_begin(&f->w, &s);
    struct gw_regs r = {.rip = rip, .rsp = rsp, .rbp = rbp};
    return lx_orc_unwind(&f->o, &f->w, &r, &f->st);
}

static void put(struct fx *f, uint64_t va, uint64_t v)
{
    assert_int_equal(gimg_write_u64(&f->g, va, v), 0);
}

/* pt_regs at va: ip, cs, sp, bp (the rest zero). */
static void put_regs(struct fx *f, uint64_t va, uint64_t ip, uint64_t cs, uint64_t sp, uint64_t bp)
{
    put(f, va + LX_PT_IP, ip);
    put(f, va + LX_PT_CS, cs);
    put(f, va + LX_PT_SP, sp);
    put(f, va + LX_PT_BP, bp);
}

/* A kernel thread: a frame-pointer frame in F_LEAF, a 24-byte frame in F_BODY, then
 * ret_from_fork. */
static void test_kernel_thread(void **state)
{
    struct fx *f = *state;
    uint64_t sp = TASK_S + 0x3000, bp = sp + 0x10;
    put(f, bp, TASK_S + 0x3f00);          /* saved rbp of the caller */
    put(f, bp + 8, T + F_BODY + 0x50);    /* return into F_BODY; CFA = bp + 16 */
    put(f, bp + 16 + 24, T + F_FORK + 1); /* F_BODY's CFA = its sp + 32 */
    assert_int_equal(unwind(f, T + F_LEAF + 0x20, sp, bp), 3);
    assert_int_equal(f->st.stop, GW_STOP_CHAIN_END);
    assert_int_equal(f->st.leaf, GW_LEAF_ORC);
    assert_false(f->st.user_entry);
    assert_int_equal(f->pc[0], T + F_LEAF + 0x20);
    assert_int_equal(f->pc[1], T + F_BODY + 0x50);
    assert_int_equal(f->pc[2], T + F_FORK + 1);
}

/* A system call: two kernel frames, then entry_SYSCALL_64's pt_regs from user mode. */
static void test_syscall_entry(void **state)
{
    struct fx *f = *state;
    uint64_t sp = TASK_S + 0x3e00; /* at the leaf's first instruction: [sp] is its return */
    put(f, sp, T + F_BODY + 0x10);
    uint64_t regs = sp + 8 + 32; /* F_BODY's CFA = sp + 32; the return address below it */
    put(f, sp + 8 + 24, T + F_SYSCALL + 0x30);
    put_regs(f, regs, 0x401234, 0x33, 0x7ffc12345670, 0x7ffc12345690);
    assert_int_equal(unwind(f, T + F_LEAF, sp, 0xdead), 3);
    assert_int_equal(f->st.stop, GW_STOP_CHAIN_END);
    assert_int_equal(f->pc[1], T + F_BODY + 0x10);
    assert_int_equal(f->pc[2], T + F_SYSCALL + 0x30);
    assert_true(f->st.user_entry);
    assert_int_equal(f->st.user_regs.rip, 0x401234);
    assert_int_equal(f->st.user_regs.rsp, 0x7ffc12345670);
    assert_int_equal(f->st.user_regs.rbp, 0x7ffc12345690);
    assert_true(f->st.user_regs.user);
    assert_int_equal(f->st.user_regs_at, regs); /* where the pt_regs lie: the task's stack */
}

/* An interrupt taken in the kernel, handled on the IRQ stack: from the IRQ stack's top slot to
 * the interrupted task stack, through the interrupt's pt_regs (a kernel cs) to the interrupted
 * PC (exact: looked up as it is), and on to ret_from_fork. */
static void test_irq_stack(void **state)
{
    struct fx *f = *state;
    uint64_t irq_top = IRQ_S + 0x3ff8;
    uint64_t s = TASK_S + 0x2000; /* the task stack when the interrupt came */
    put(f, irq_top, s);           /* the interrupted sp, as call_on_irqstack leaves it */
    put(f, s + 8 - 8, T + F_IRQENTRY + 0x40);
    uint64_t regs = s + 8;
    /* Interrupted at F_LEAF's first instruction: its return address at the interrupted sp. */
    uint64_t isp = regs + LX_PT_SIZE + 0x100;
    put_regs(f, regs, T + F_LEAF, 0x10, isp, 0x1111);
    put(f, isp, T + F_FORK + 5);
    assert_int_equal(unwind(f, T + F_ONIRQ + 0x10, irq_top, 0), 4);
    assert_int_equal(f->st.stop, GW_STOP_CHAIN_END);
    assert_int_equal(f->pc[1], T + F_IRQENTRY + 0x40);
    assert_int_equal(f->pc[2], T + F_LEAF);
    assert_int_equal(f->pc[3], T + F_FORK + 5);
    assert_false(f->st.user_entry);
    /* pc[2] is where the interrupt struck (F_LEAF's first byte): exact, not a return address,
     * so a symbolizer names F_LEAF, not what precedes it. */
    assert_int_equal(f->st.exact, 1u << 2);
}

/* A sample in a retpoline thunk, which ORC marks as an end: the caller whose `call rel32`
 * targeted the thunk is read at [rsp], and the walk goes on from it; a call elsewhere is not
 * taken. */
static void test_called_thunk(void **state)
{
    struct fx *f = *state;
    uint64_t ret = T + F_BODY + 0x4a, sp = TASK_S + 0x3000;
    int32_t rel = (int32_t)((T + F_THUNK) - ret);
    uint8_t call[5] = {0xe8};
    memcpy(call + 1, &rel, 4);
    assert_int_equal(gimg_write(&f->g, ret - 5, call, 5), 0);
    put(f, sp, ret);
    put(f, sp + 8 + 24, T + F_FORK + 1); /* F_BODY: CFA = sp + 32 */
    assert_int_equal(unwind(f, T + F_THUNK + 3, sp, 0), 3);
    assert_int_equal(f->st.stop, GW_STOP_CHAIN_END);
    assert_int_equal(f->st.leaf, GW_LEAF_ENTRY);
    assert_int_equal(f->pc[1], ret);
    assert_int_equal(f->pc[2], T + F_FORK + 1);
    /* The call before the return address targets other code: the thunk stays an end. */
    rel += 0x100;
    memcpy(call + 1, &rel, 4);
    assert_int_equal(gimg_write(&f->g, ret - 5, call, 5), 0);
    assert_int_equal(unwind(f, T + F_THUNK + 3, sp, 0), 1);
    assert_int_equal(f->st.stop, GW_STOP_CHAIN_END);
}

static void test_hostile(void **state)
{
    struct fx *f = *state;
    uint64_t sp = TASK_S + 0x1000;
    /* A frame that does not move: CFA = sp, its return address below sp, pointing back. */
    put(f, sp - 8, T + F_SPIN + 0x10);
    unwind(f, T + F_SPIN + 0x10, sp, 0);
    assert_int_equal(f->st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(f->st.bad, GW_BAD_NOT_INCREASING);
    /* An indirect CFA that leads back to the same frame: stack switches are bounded. */
    put(f, sp, sp); /* CFA = [sp]: the same sp again, its return address below it */
    put(f, sp - 8, T + F_LOOP + 0x10);
    unsigned n = unwind(f, T + F_LOOP + 0x10, sp, 0);
    assert_int_equal(f->st.stop, GW_STOP_INVALID_FRAME);
    assert_true(n <= LX_ORC_MAX_SWITCHES + 2);
    /* No entry for the PC (outside the table), and an undefined one. */
    unwind(f, T + 0x100000, sp, 0);
    assert_int_equal(f->st.stop, GW_STOP_NO_UNWIND_INFO);
    assert_int_equal(f->st.bad_value, T + 0x100000);
    assert_int_equal(f->st.count, 1);
    unwind(f, T + F_TERM + 4, sp, 0);
    assert_int_equal(f->st.stop, GW_STOP_NO_UNWIND_INFO);
    /* A CFA in the user half is never read. */
    unwind(f, T + F_USERCFA, sp, 0x7ffc00000000ull - 0x7000);
    assert_int_equal(f->st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(f->st.bad, GW_BAD_WRONG_HALF);
    /* Unmapped: the stack below the mapping. */
    unwind(f, T + F_BODY, TASK_S - 0x100, 0);
    assert_int_equal(f->st.stop, GW_STOP_UNMAPPED);
    /* A return address in the user half. */
    put(f, sp + 24, 0x401000);
    unwind(f, T + F_BODY, sp, 0);
    assert_int_equal(f->st.stop, GW_STOP_INVALID_FRAME);
    assert_int_equal(f->st.bad, GW_BAD_WRONG_HALF);
    /* The depth cap: the kernel thread's stack with room for two frames. */
    f->st = GW_STACK_INIT(f->pc, 2);
    uint64_t bp = TASK_S + 0x3010;
    put(f, bp + 8, T + F_BODY + 0x50);
    put(f, bp + 16 + 24, T + F_FORK + 1);
    assert_int_equal(unwind(f, T + F_LEAF + 0x20, TASK_S + 0x3000, bp), 2);
    assert_int_equal(f->st.stop, GW_STOP_DEPTH_CAP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_register_numbering),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test_setup_teardown(test_kernel_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syscall_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_irq_stack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_called_thunk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
