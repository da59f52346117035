#include "guestwalk/cfi_unwind.h"

#include "guestwalk/cfi_expr.h"

const struct gw_cfi_module *gw_cfi_map_find(const struct gw_cfi_map *map, uint64_t pc)
{
    if (!map)
        return NULL;
    size_t lo = 0, hi = map->n; /* the last module with m.lo <= pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (map->m[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || pc >= map->m[lo - 1].hi)
        return NULL;
    return &map->m[lo - 1];
}

struct frame {
    uint64_t pc, rsp, rbp;
    bool rbp_known;
    bool signal; /* this frame's PC is exact (the frame below was a signal frame) */
};

struct cwalk {
    struct gw_walker *w;
    struct gw_stack *st;
    uint64_t rsp0; /* frame 0's RSP: the stack window's base */
};

static bool read_mem(void *ctx, uint64_t va, unsigned size, uint64_t *v)
{
    struct cwalk *c = ctx;
    if (size == 8) {
        struct pt_fault f;
        return gw_stack_read_u64(c->w, va, true, v, &f) == 0;
    }
    uint8_t b[8] = {0};
    if (gw_read_virt(c->w, va, b, size, true, NULL) != 0)
        return false;
    *v = 0;
    for (unsigned i = 0; i < size; i++)
        *v |= (uint64_t)b[i] << (8 * i);
    return true;
}

static void stop_bad(struct gw_stack *st, enum gw_bad_frame bad, uint64_t v)
{
    st->stop = GW_STOP_INVALID_FRAME;
    st->bad = bad;
    st->bad_value = v;
}

static bool user_addr(const struct gw_walker *w, uint64_t v)
{
    return pt_canonical(&w->mmu, v) && (v >> 63) == 0;
}

static bool eval(struct cwalk *c, const struct cfi_table *t, int64_t idx, const struct frame *f,
                 bool push, uint64_t cfa, uint64_t *out)
{
    if (idx < 0 || (size_t)idx >= t->nexprs)
        return false;
    const struct cfi_expr *x = &t->exprs[idx];
    struct cfi_expr_regs regs = {f->rsp, f->rbp, f->pc, f->rbp_known};
    return cfi_expr_eval(t->expr_bytes + x->off, x->len, &regs, push, cfa, read_mem, c, out);
}

/* A register rule's value. 1: *v; 0: unchanged (same value); -1: undefined; -2: not evaluable;
 * -3: the read failed (st->fault set). */
static int rule_value(struct cwalk *c, const struct cfi_table *t, uint8_t kind, int16_t off,
                      const struct frame *f, uint64_t cfa, uint64_t *v)
{
    uint64_t addr;
    switch (kind) {
    case CFI_RULE_SAME:
        return 0;
    case CFI_RULE_UNDEF:
        return -1;
    case CFI_RULE_VAL:
        *v = cfa + (uint64_t)(int64_t)off;
        return 1;
    case CFI_RULE_VAL_EXPR:
        return eval(c, t, off, f, true, cfa, v) ? 1 : -2;
    case CFI_RULE_AT:
        addr = cfa + (uint64_t)(int64_t)off;
        break;
    case CFI_RULE_AT_EXPR:
        if (!eval(c, t, off, f, true, cfa, &addr))
            return -2;
        break;
    default:
        return -2;
    }
    return gw_stack_read_u64(c->w, addr, true, v, &c->st->fault) == 0 ? 1 : -3;
}

/* One step with a table row: f becomes the caller's frame. Returns false when the walk ends
 * (st->stop set). */
static bool step_cfi(struct cwalk *c, const struct gw_cfi_module *m, const struct cfi_row *row,
                     struct frame *f)
{
    struct gw_stack *st = c->st;
    const struct cfi_table *t = m->t;
    uint64_t cfa;
    switch (row->cfa) {
    case CFI_CFA_RSP:
        cfa = f->rsp + (uint64_t)(int64_t)row->cfa_off;
        break;
    case CFI_CFA_RBP:
        if (!f->rbp_known) {
            stop_bad(st, GW_BAD_OUTSIDE_WINDOW, f->pc);
            return false;
        }
        cfa = f->rbp + (uint64_t)(int64_t)row->cfa_off;
        break;
    case CFI_CFA_EXPR:
        if (!eval(c, t, row->cfa_off, f, false, 0, &cfa)) {
            st->stop = GW_STOP_UNWIND_RULE;
            st->bad_value = f->pc;
            return false;
        }
        break;
    default:
        st->stop = GW_STOP_UNWIND_RULE;
        st->bad_value = f->pc;
        return false;
    }
    bool signal = (row->flags & CFI_ROW_SIGNAL) != 0;
    /* The stack rises frame by frame; a signal frame may sit on an alternate stack. */
    if (cfa <= f->rsp && !signal) {
        stop_bad(st, GW_BAD_NOT_INCREASING, cfa);
        return false;
    }
    if (!user_addr(c->w, cfa)) {
        stop_bad(st, GW_BAD_NON_CANONICAL, cfa);
        return false;
    }
    if (!signal &&
        (cfa - c->rsp0 >= c->w->cfg.stack_window || cfa - f->rsp > c->w->cfg.max_frame)) {
        stop_bad(st, GW_BAD_OUTSIDE_WINDOW, cfa);
        return false;
    }
    uint64_t ra = 0, rbp = f->rbp;
    int rc = rule_value(c, t, row->ra, row->ra_off, f, cfa, &ra);
    if (rc == -1 || (rc == 1 && ra == 0)) {
        st->stop = GW_STOP_CHAIN_END; /* the outermost frame: _start, clone3, a thread start */
        return false;
    }
    if (rc != 1) {
        st->stop = rc == -3 ? GW_STOP_UNMAPPED : GW_STOP_UNWIND_RULE;
        st->bad_value = f->pc;
        return false;
    }
    int rb = rule_value(c, t, row->rbp, row->rbp_off, f, cfa, &rbp);
    if (rb == -3) {
        st->stop = GW_STOP_UNMAPPED;
        return false;
    }
    f->rbp_known = rb == 1 || (rb == 0 && f->rbp_known);
    if (!user_addr(c->w, ra)) {
        stop_bad(st, GW_BAD_NON_CANONICAL, ra);
        return false;
    }
    f->pc = ra;
    f->rsp = cfa;
    f->rbp = rb == 1 ? rbp : f->rbp;
    f->signal = signal;
    return true;
}

/* One frame-pointer step (no table for this PC): the record at RBP. */
static bool step_fp(struct cwalk *c, struct frame *f)
{
    struct gw_stack *st = c->st;
    uint64_t fp = f->rbp;
    if (!f->rbp_known) {
        stop_bad(st, GW_BAD_OUTSIDE_WINDOW, fp);
        return false;
    }
    if (fp == 0) {
        st->stop = GW_STOP_CHAIN_END;
        return false;
    }
    if (!user_addr(c->w, fp)) {
        stop_bad(st, GW_BAD_NON_CANONICAL, fp);
        return false;
    }
    if (fp & 7) {
        stop_bad(st, GW_BAD_MISALIGNED, fp);
        return false;
    }
    if (fp < f->rsp) {
        stop_bad(st, GW_BAD_NOT_INCREASING, fp);
        return false;
    }
    if (fp - c->rsp0 >= c->w->cfg.stack_window || fp - f->rsp > c->w->cfg.max_frame ||
        fp > UINT64_MAX - 16) {
        stop_bad(st, GW_BAD_OUTSIDE_WINDOW, fp);
        return false;
    }
    uint64_t next, ret;
    if (gw_stack_read_u64(c->w, fp, true, &next, &st->fault) != 0 ||
        gw_stack_read_u64(c->w, fp + 8, true, &ret, &st->fault) != 0) {
        st->stop = GW_STOP_UNMAPPED;
        return false;
    }
    if (ret == 0) {
        st->stop = GW_STOP_CHAIN_END;
        return false;
    }
    if (!user_addr(c->w, ret)) {
        stop_bad(st, GW_BAD_NON_CANONICAL, ret);
        return false;
    }
    f->pc = ret;
    f->rsp = fp + 16;
    f->rbp = next;
    f->signal = false;
    return true;
}

unsigned gw_cfi_unwind(const struct gw_cfi_map *map, struct gw_walker *w, const struct gw_regs *r,
                       struct gw_stack *st)
{
    if (!map || !r->user)
        return gw_unwind_regs(w, r, st); /* no tables: frame pointers as before */
    gw_stack_reset(st);
    unsigned cap = st->capacity < w->cfg.max_depth ? st->capacity : w->cfg.max_depth;
    if (w->mmu.mode == PT_MODE_NONE) {
        st->fault.reason = PT_NOT_LONG_MODE;
        st->stop = GW_STOP_UNSUPPORTED_MODE;
        return 0;
    }
    if (cap == 0) {
        st->stop = GW_STOP_DEPTH_CAP;
        return 0;
    }
    struct cwalk c = {w, st, r->rsp};
    struct frame f = {r->rip, r->rsp, r->rbp, true, true};
    st->pc[st->count++] = r->rip;
    unsigned switches = 0;
    /* f.pc is exact or a return address the tables gave (not one read by frame pointers
     * through code that may not keep them): only such a PC outside every module is code that
     * waits for its tables (cfi_outside). */
    bool trusted = true;
    while (st->count < cap) {
        /* A return address is after its call: look up the call (pc - 1). Frame 0 and the frame a
         * signal interrupted have their exact PC. */
        uint64_t look = f.signal ? f.pc : f.pc - 1;
        const struct gw_cfi_module *m = gw_cfi_map_find(map, look);
        const struct cfi_row *row = m && m->t ? cfi_find(m->t, look - m->bias) : NULL;
        if (row) {
            if (!step_cfi(&c, m, row, &f))
                return st->count;
            if (f.signal) {
                /* Past a signal frame the interrupted stack may be anywhere (sigaltstack): its
                 * own window starts there; such switches are bounded. */
                if (++switches > CFI_MAX_SWITCHES) {
                    stop_bad(st, GW_BAD_NOT_INCREASING, f.rsp);
                    return st->count;
                }
                c.rsp0 = f.rsp;
            }
            if (st->count == 1)
                st->leaf = GW_LEAF_CFI;
            st->cfi_frames++;
            st->pc[st->count++] = f.pc;
            trusted = true;
            continue;
        }
        if (m)
            st->cfi_gap = true;
        else if (trusted)
            st->cfi_outside = true;
        trusted = false;
        if (st->count == 1) {
            /* Frame 0 without a table: the leaf repair's cases, then the frame chain. */
            uint64_t above = gw_unwind_leaf(w, r, st);
            if (st->count > 1) {
                f.pc = st->pc[st->count - 1];
                f.rsp = above;
                f.signal = false;
                continue;
            }
        }
        if (!step_fp(&c, &f))
            return st->count;
        st->pc[st->count++] = f.pc;
    }
    st->stop = GW_STOP_DEPTH_CAP;
    return st->count;
}

static unsigned cfi_unwind(const struct gw_unwinder *u, struct gw_walker *w,
                           const struct gw_regs *r, struct gw_stack *st)
{
    (void)u;
    return gw_cfi_unwind(w->cfi, w, r, st);
}

const struct gw_unwinder gw_cfi_unwinder = {.name = "cfi", .unwind = cfi_unwind};
