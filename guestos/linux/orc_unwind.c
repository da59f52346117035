#include "guestos/linux/orc_unwind.h"

#include <stdatomic.h>
#include <string.h>

#include "guestwalk/frameless.h"

struct orc_walk {
    struct gw_walker *w;
    struct gw_stack *st;
};

static bool fail(struct orc_walk *k, enum gw_stop why)
{
    k->st->stop = why;
    return false;
}

static bool bad(struct orc_walk *k, enum gw_bad_frame b, uint64_t value)
{
    k->st->bad = b;
    k->st->bad_value = value;
    return fail(k, GW_STOP_INVALID_FRAME);
}

/* A kernel stack address: canonical and in the upper half (checked before every read, so a
 * forged offset cannot send the walk into user memory). */
static bool kernel_va(struct orc_walk *k, uint64_t va)
{
    if (!pt_canonical(&k->w->mmu, va))
        return bad(k, GW_BAD_NON_CANONICAL, va);
    if (!(va >> 63))
        return bad(k, GW_BAD_WRONG_HALF, va);
    return true;
}

static bool read_kernel(struct orc_walk *k, uint64_t va, void *dst, size_t len)
{
    if (!kernel_va(k, va))
        return false;
    size_t avail;
    const uint8_t *p = gw_tlb_map(&k->w->tlb, &k->w->mmu, k->w->mem, va, PT_ACC_SUPERVISOR, &avail,
                                  NULL, &k->st->fault);
    if (p && avail >= len) {
        memcpy(dst, p, len);
        return true;
    }
    if (p && gw_read_virt(k->w, va, dst, len, false, &k->st->fault) == 0)
        return true;
    return fail(k, GW_STOP_UNMAPPED);
}

static bool read_u64(struct orc_walk *k, uint64_t va, uint64_t *v)
{
    return read_kernel(k, va, v, sizeof(*v));
}

/* The registers of one frame, and the last full pt_regs seen (its address, 0 if none since a
 * CALL frame). */
struct frame {
    uint64_t ip, sp, bp;
    uint64_t regs;
    bool signal; /* ip is exact (interrupted), not a return address */
};

/* A register ORC may name as the CFA's base: AX, DX, DI, R10 or R13 of the last full
 * pt_regs. */
static bool regs_reg(struct orc_walk *k, const struct frame *f, unsigned reg, uint64_t *v)
{
    static const uint16_t at[] = {[LX_ORC_REG_AX] = LX_PT_AX,
                                  [LX_ORC_REG_DX] = LX_PT_DX,
                                  [LX_ORC_REG_DI] = LX_PT_DI,
                                  [LX_ORC_REG_R10] = LX_PT_R10,
                                  [LX_ORC_REG_R13] = LX_PT_R13};
    if (!f->regs) {
        k->st->bad_value = f->ip;
        return fail(k, GW_STOP_NO_UNWIND_INFO);
    }
    return read_u64(k, f->regs + at[reg], v);
}

/* The table whose code holds ip: the kernel image's, or a loaded module's. */
static const struct lx_orc_table *table_for(const struct lx_orc *o, uint64_t ip)
{
    if (ip >= o->vmlinux.lo && ip < o->vmlinux.hi)
        return &o->vmlinux;
    const struct lx_orc_mods *m = atomic_load_explicit(&o->mods, memory_order_acquire);
    if (!m)
        return NULL;
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ip < m->m[mid].lo)
            hi = mid;
        else if (ip >= m->m[mid].hi)
            lo = mid + 1;
        else
            return m->m[mid].t;
    }
    return NULL;
}

/* One step of unwind_next_frame: from f to its caller in *out. False: the walk ends (st->stop
 * set; GW_STOP_CHAIN_END with user_entry at the user boundary). */
static bool step(const struct lx_orc *o, struct orc_walk *k, const struct frame *f,
                 struct frame *out, bool *switched)
{
    /* A return address is looked up one byte back (the call may be a function's last
     * instruction); an interrupted PC as it is. */
    uint64_t at = f->signal ? f->ip : f->ip - 1;
    const struct lx_orc_table *t = table_for(o, at);
    const struct lx_orc_entry *e = t ? lx_orc_find(t, at) : NULL;
    if (!e || e->type == LX_ORC_TYPE_UNDEFINED) {
        k->st->bad_value = f->ip;
        return fail(k, GW_STOP_NO_UNWIND_INFO);
    }
    if (e->type == LX_ORC_TYPE_END_OF_STACK)
        return fail(k, GW_STOP_CHAIN_END);

    /* The CFA: the stack pointer of the caller, before the call pushed its return address. */
    uint64_t cfa;
    bool indirect = false;
    switch (e->sp_reg) {
    case LX_ORC_REG_SP:
        cfa = f->sp + (uint64_t)(int64_t)e->sp_offset;
        break;
    case LX_ORC_REG_BP:
        cfa = f->bp + (uint64_t)(int64_t)e->sp_offset;
        break;
    case LX_ORC_REG_SP_INDIRECT: /* the IRQ stack's top slot holds the interrupted sp */
        if (!read_u64(k, f->sp, &cfa))
            return false;
        cfa += (uint64_t)(int64_t)e->sp_offset;
        indirect = true;
        break;
    case LX_ORC_REG_BP_INDIRECT:
        if (!read_u64(k, f->bp + (uint64_t)(int64_t)e->sp_offset, &cfa))
            return false;
        indirect = true;
        break;
    case LX_ORC_REG_AX:
    case LX_ORC_REG_DX:
    case LX_ORC_REG_DI:
    case LX_ORC_REG_R10:
    case LX_ORC_REG_R13:
        if (!regs_reg(k, f, e->sp_reg, &cfa))
            return false;
        indirect = true;
        break;
    default:
        k->st->bad_value = f->ip;
        return fail(k, GW_STOP_NO_UNWIND_INFO);
    }
    if (!kernel_va(k, cfa))
        return false;

    *out = (struct frame){.bp = f->bp, .signal = e->signal};
    uint64_t cs = 0, regs_bp = 0;
    bool full = false;
    switch (e->type) {
    case LX_ORC_TYPE_CALL:
        if (cfa < 8 || !read_u64(k, cfa - 8, &out->ip))
            return false;
        out->sp = cfa;
        break;
    case LX_ORC_TYPE_REGS: { /* a full pt_regs at the CFA */
        uint8_t r[LX_PT_SIZE];
        if (!read_kernel(k, cfa, r, sizeof(r)))
            return false;
        memcpy(&out->ip, r + LX_PT_IP, 8);
        memcpy(&out->sp, r + LX_PT_SP, 8);
        memcpy(&cs, r + LX_PT_CS, 8);
        memcpy(&regs_bp, r + LX_PT_BP, 8);
        out->regs = cfa;
        out->signal = true; /* an interrupted PC (ORC entries carry a signal bit only from 6.3) */
        full = true;
        break;
    }
    case LX_ORC_TYPE_REGS_PARTIAL: { /* only the IRET frame: pt_regs start 128 bytes below */
        uint8_t r[LX_PT_SIZE - LX_PT_IP];
        if (!read_kernel(k, cfa, r, sizeof(r)))
            return false;
        memcpy(&out->ip, r, 8);
        memcpy(&cs, r + (LX_PT_CS - LX_PT_IP), 8);
        memcpy(&out->sp, r + (LX_PT_SP - LX_PT_IP), 8);
        out->signal = true;
        break;
    }
    default:
        k->st->bad_value = f->ip;
        return fail(k, GW_STOP_NO_UNWIND_INFO);
    }

    /* The caller's frame pointer. */
    switch (e->bp_reg) {
    case LX_ORC_REG_UNDEFINED:
        if (full)
            out->bp = regs_bp;
        break;
    case LX_ORC_REG_PREV_SP:
        if (!read_u64(k, cfa + (uint64_t)(int64_t)e->bp_offset, &out->bp))
            return false;
        break;
    case LX_ORC_REG_BP:
        if (!read_u64(k, f->bp + (uint64_t)(int64_t)e->bp_offset, &out->bp))
            return false;
        break;
    default:
        k->st->bad_value = f->ip;
        return fail(k, GW_STOP_NO_UNWIND_INFO);
    }

    /* The user boundary: pt_regs saved from CPL 3 (user_mode(), the low two bits of cs; from
     * 6.9 cs is a union with FRED bits above bit 15). */
    if (e->type != LX_ORC_TYPE_CALL && (cs & 3)) {
        k->st->user_entry = true;
        k->st->user_regs =
            (struct gw_regs){.rip = out->ip, .rsp = out->sp, .rbp = out->bp, .user = true};
        k->st->user_regs_at = e->type == LX_ORC_TYPE_REGS ? cfa : cfa - LX_PT_IP;
        return fail(k, GW_STOP_CHAIN_END);
    }
    if (out->ip == 0)
        return fail(k, GW_STOP_CHAIN_END);
    if (!pt_canonical(&k->w->mmu, out->ip))
        return bad(k, GW_BAD_NON_CANONICAL, out->ip);
    if (!(out->ip >> 63))
        return bad(k, GW_BAD_WRONG_HALF, out->ip);
    /* A return address outside every table (code without ORC, or something that is not code
     * at all, as a stack address read where a function's frame is half switched) must follow
     * a call instruction, or the walk ends before recording it. */
    if (e->type == LX_ORC_TYPE_CALL && !table_for(o, out->ip - 1)) {
        uint8_t before[8];
        struct pt_fault ignored;
        if (gw_read_virt(k->w, out->ip - sizeof(before), before, sizeof(before), false, &ignored) !=
                0 ||
            !gw_after_call(before, sizeof(before)))
            return bad(k, GW_BAD_NOT_AFTER_CALL, out->ip);
    }
    /* On one stack the caller's frame is above the callee's; only a pointer read from memory
     * (an indirect CFA, a pt_regs' sp) may lead to another stack, and only a few times. */
    *switched = false;
    if (out->sp <= f->sp) {
        if (!indirect && e->type == LX_ORC_TYPE_CALL)
            return bad(k, GW_BAD_NOT_INCREASING, out->sp);
        *switched = true;
    } else if (!indirect && e->type == LX_ORC_TYPE_CALL && out->sp - f->sp > k->w->cfg.max_frame)
        return bad(k, GW_BAD_OUTSIDE_WINDOW, out->sp);
    return true;
}

/* Frame 0 only: code that ORC marks as an end or knows nothing of, which a call has just entered
 * and which keeps the stack as the call left it (a retpoline thunk, a static-call trampoline):
 * [rsp] is its caller's return address if the `call rel32` before it targeted this code, at
 * most 64 bytes before the PC, and the caller is in a table. */
static bool called_entry(const struct lx_orc *o, struct orc_walk *k, const struct frame *f,
                         struct frame *out)
{
    uint64_t ret;
    uint8_t call[5];
    int32_t rel;
    struct pt_fault ignored;
    if ((f->sp & 7) || !(f->sp >> 63) || gw_read_virt(k->w, f->sp, &ret, 8, false, &ignored) != 0 ||
        !(ret >> 63) || !pt_canonical(&k->w->mmu, ret) || !table_for(o, ret - 1) ||
        gw_read_virt(k->w, ret - 5, call, 5, false, &ignored) != 0 || call[0] != 0xe8)
        return false;
    memcpy(&rel, call + 1, 4);
    uint64_t target = ret + (uint64_t)(int64_t)rel;
    if (f->ip < target || f->ip - target >= 64)
        return false;
    *out = (struct frame){.ip = ret, .sp = f->sp + 8, .bp = f->bp};
    return true;
}

unsigned lx_orc_unwind(const struct lx_orc *o, struct gw_walker *w, const struct gw_regs *r,
                       struct gw_stack *st)
{
    gw_stack_reset(st);
    if (w->mmu.mode == PT_MODE_NONE) {
        st->fault.reason = PT_NOT_LONG_MODE;
        st->stop = GW_STOP_UNSUPPORTED_MODE;
        return 0;
    }
    unsigned cap = st->capacity < w->cfg.max_depth ? st->capacity : w->cfg.max_depth;
    if (cap == 0) {
        st->stop = GW_STOP_DEPTH_CAP;
        return 0;
    }
    struct orc_walk k = {w, st};
    /* Frame 0 is the interrupted PC itself (unwind_orc.c starts from regs with signal set). */
    struct frame f = {.ip = r->rip, .sp = r->rsp, .bp = r->rbp, .signal = true};
    st->pc[st->count++] = f.ip;
    unsigned switches = 0;
    while (st->count < cap) {
        struct frame next;
        bool switched = false;
        if (!step(o, &k, &f, &next, &switched)) {
            if (st->count > 1 || st->user_entry ||
                (st->stop != GW_STOP_CHAIN_END && st->stop != GW_STOP_NO_UNWIND_INFO) ||
                !called_entry(o, &k, &f, &next))
                return st->count;
            st->stop = GW_STOP_NONE;
            st->bad_value = 0;
            st->leaf = GW_LEAF_ENTRY; /* the caller read at [rsp], not from a table */
            st->pc[st->count++] = next.ip;
            f = next;
            continue;
        }
        if (switched && ++switches > LX_ORC_MAX_SWITCHES)
            return bad(&k, GW_BAD_NOT_INCREASING, next.sp), st->count;
        if (st->count == 1 && st->leaf == GW_LEAF_NONE)
            st->leaf = GW_LEAF_ORC;
        /* Past pt_regs the IP is where the interrupt struck, maybe a function's first byte: a
         * symbolizer must not look it up at ip - 1 as it does for a return address. */
        if (next.signal && st->count < 32)
            st->exact |= 1u << st->count;
        st->pc[st->count++] = next.ip;
        f = next;
    }
    st->stop = GW_STOP_DEPTH_CAP;
    return st->count;
}
