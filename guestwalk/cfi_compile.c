/* .eh_frame_hdr and .eh_frame into a cfi_table (guestwalk/cfi.h). References: DWARF 5 §6.4.1
 * (CIE and FDE fields), §6.4.2 (the CFA instructions), §7.24 (their encodings); LSB Core 5.0
 * §10.6.1 (.eh_frame: length, CIE id 0, CIE pointer, augmentation strings and data, DW_EH_PE
 * encodings) and §10.6.2 (.eh_frame_hdr: version 1, eh_frame_ptr_enc, fde_count_enc,
 * table_enc). */
#include "guestwalk/cfi.h"

#include <stdlib.h>
#include <string.h>

#include "common/vector.h"

#define PAGE 4096ull

/* Pointer encodings (LSB Core §10.5.1, Tables 10-6 and 10-7). */
enum {
    PE_ABSPTR = 0x00,
    PE_ULEB128 = 0x01,
    PE_UDATA2 = 0x02,
    PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04,
    PE_SLEB128 = 0x09,
    PE_SDATA2 = 0x0a,
    PE_SDATA4 = 0x0b,
    PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10,
    PE_DATAREL = 0x30,
    PE_INDIRECT = 0x80,
    PE_OMIT = 0xff,
};

/* A bounded cursor over src: `va` is the link-time address of p. */
struct cur {
    const uint8_t *p, *end;
    uint64_t va;
    bool bad;
};

/* [va, va + len) inside src with every page present: a host pointer to it, else NULL. *absent
 * says whether a missing page (not a range outside src) was the reason. */
static const uint8_t *src_at(const struct cfi_src *s, uint64_t va, uint64_t len, bool *absent)
{
    *absent = false;
    if (va < s->vaddr || len > s->len || va - s->vaddr > s->len - len)
        return NULL;
    if (s->present && len) {
        uint64_t first = (va >> 12) - (s->vaddr >> 12),
                 last = ((va + len - 1) >> 12) - (s->vaddr >> 12);
        for (uint64_t pg = first; pg <= last; pg++)
            if (!s->present[pg]) {
                *absent = true;
                return NULL;
            }
    }
    return s->data + (va - s->vaddr);
}

static bool cur_init(struct cur *c, const struct cfi_src *s, uint64_t va, uint64_t len,
                     bool *absent)
{
    const uint8_t *p = src_at(s, va, len, absent);
    *c = (struct cur){p, p ? p + len : NULL, va, p == NULL};
    return p != NULL;
}

static bool need(struct cur *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return false;
    }
    return true;
}

/* A DWARF offset times the data alignment factor (|factor| <= 256, parse_cie): a value that
 * cannot be a stack offset saturates to one that no row can hold (CFI_RULE_OTHER). */
static int64_t scaled(int64_t v, int64_t factor)
{
    if (v > (1ll << 40) || v < -(1ll << 40))
        return 1ll << 50;
    return v * factor;
}

static uint64_t get_n(struct cur *c, size_t n)
{
    if (!need(c, n))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    c->va += n;
    return v;
}

static uint64_t uleb(struct cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (!need(c, 1))
            return 0;
        uint8_t b = *c->p++;
        c->va++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
        if (shift > 70) { /* longer than any 64-bit value */
            c->bad = true;
            return 0;
        }
    }
}

static int64_t sleb(struct cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (!need(c, 1))
            return 0;
        b = *c->p++;
        c->va++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (shift > 77) {
            c->bad = true;
            return 0;
        }
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~0ull << shift;
    return (int64_t)v;
}

/* An encoded pointer (LSB §10.5.1). `datarel` is the base of DW_EH_PE_datarel (the
 * .eh_frame_hdr's address there; unused in .eh_frame). Indirect pointers would need a read of
 * the pointed-to word, which pc_begin never uses: refused. */
static uint64_t get_ptr(struct cur *c, uint8_t enc, uint64_t datarel)
{
    if (enc == PE_OMIT || (enc & PE_INDIRECT)) {
        c->bad = true;
        return 0;
    }
    uint64_t at = c->va, v;
    switch (enc & 0x0f) {
    case PE_ABSPTR:
    case PE_UDATA8:
    case PE_SDATA8:
        v = get_n(c, 8);
        break;
    case PE_ULEB128:
        v = uleb(c);
        break;
    case PE_UDATA2:
        v = get_n(c, 2);
        break;
    case PE_UDATA4:
        v = get_n(c, 4);
        break;
    case PE_SLEB128:
        v = (uint64_t)sleb(c);
        break;
    case PE_SDATA2:
        v = (uint64_t)(int64_t)(int16_t)get_n(c, 2);
        break;
    case PE_SDATA4:
        v = (uint64_t)(int64_t)(int32_t)get_n(c, 4);
        break;
    default:
        c->bad = true;
        return 0;
    }
    switch (enc & 0x70) {
    case 0:
        return v;
    case PE_PCREL:
        return at + v;
    case PE_DATAREL:
        return datarel + v;
    default: /* textrel, funcrel, aligned: not used by x86-64 toolchains in .eh_frame */
        c->bad = true;
        return 0;
    }
}

/* The size of an encoded value whose format is fixed (the search table's entries). */
static unsigned enc_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case PE_UDATA2:
    case PE_SDATA2:
        return 2;
    case PE_UDATA4:
    case PE_SDATA4:
        return 4;
    case PE_ABSPTR:
    case PE_UDATA8:
    case PE_SDATA8:
        return 8;
    default:
        return 0;
    }
}

/* ---- the compiler's state ---------------------------------------------------------------- */

struct rule {
    uint8_t kind; /* enum cfi_rule */
    int64_t off;  /* CFA offset, or an expression index */
};

struct regs_state {
    uint8_t cfa;     /* enum cfi_cfa */
    int64_t cfa_off; /* or an expression index */
    uint8_t cfa_reg; /* DWARF register number for CFI_CFA_RSP/RBP/OTHER_REG */
    struct rule rbp, ra;
};

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool signal, has_aug_data;
    struct cur init; /* the initial instructions */
};

struct builder {
    struct cfi_table *t;
    size_t cap_rows, cap_exprs, cap_bytes;
    bool oom;
    /* Bytes of CIEs and FDEs left to read: a forged .eh_frame_hdr can point every entry at one
     * huge FDE (or FDEs at one huge CIE); the total stays linear in the input. */
    uint64_t budget;
};

/* Room for need_n elements in a table array bounded by `max` (common/vector.h). */
static bool grow(void **v, size_t *cap, size_t need_n, size_t elem, size_t max)
{
    if (need_n <= *cap)
        return true;
    void *p = hv_vec_grow_max(*v, cap, need_n, elem, max);
    if (!p)
        return false;
    *v = p;
    return true;
}

/* The index of an expression (deduplicated: the PLT's and signal frames' repeat), or -1. */
static int64_t add_expr(struct builder *b, const uint8_t *p, uint64_t len)
{
    struct cfi_table *t = b->t;
    if (len == 0 || len > CFI_MAX_EXPR_LEN)
        return -1;
    for (size_t i = 0; i < t->nexprs; i++)
        if (t->exprs[i].len == len && !memcmp(t->expr_bytes + t->exprs[i].off, p, len))
            return (int64_t)i;
    if (t->nexprs >= CFI_MAX_EXPRS)
        return -1;
    if (!grow((void **)&t->exprs, &b->cap_exprs, t->nexprs + 1, sizeof(*t->exprs), CFI_MAX_EXPRS) ||
        !grow((void **)&t->expr_bytes, &b->cap_bytes, t->expr_len + len, 1,
              (size_t)CFI_MAX_EXPRS * CFI_MAX_EXPR_LEN)) {
        b->oom = true;
        return -1;
    }
    memcpy(t->expr_bytes + t->expr_len, p, len);
    t->exprs[t->nexprs] = (struct cfi_expr){(uint32_t)t->expr_len, (uint16_t)len};
    t->expr_len += len;
    return (int64_t)t->nexprs++;
}

static bool fits16(int64_t v)
{
    return v >= INT16_MIN && v <= INT16_MAX;
}

/* Append a row for [pc, ...) from state s (skipped when it repeats the last row). */
static void emit(struct builder *b, uint64_t pc, const struct regs_state *s, uint8_t flags)
{
    struct cfi_table *t = b->t;
    if (pc < t->base || pc - t->base > UINT32_MAX)
        return;
    struct cfi_row r = {.pc = (uint32_t)(pc - t->base), .cfa = s->cfa, .flags = flags};
    if (s->cfa == CFI_CFA_RSP || s->cfa == CFI_CFA_RBP || s->cfa == CFI_CFA_EXPR) {
        if (s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX)
            r.cfa = CFI_CFA_OTHER_REG;
        else
            r.cfa_off = (int32_t)s->cfa_off;
    }
    r.rbp = s->rbp.kind;
    r.ra = s->ra.kind;
    if (!fits16(s->rbp.off))
        r.rbp = CFI_RULE_OTHER;
    else
        r.rbp_off = (int16_t)s->rbp.off;
    if (!fits16(s->ra.off))
        r.ra = CFI_RULE_OTHER;
    else
        r.ra_off = (int16_t)s->ra.off;
    if (t->nrows) {
        struct cfi_row *last = &t->rows[t->nrows - 1];
        if (last->pc == r.pc) {
            *last = r; /* several rows for one address: the last rules win */
            return;
        }
        if (!memcmp((const uint8_t *)last + 4, (const uint8_t *)&r + 4, sizeof(r) - 4))
            return;
    }
    if (!grow((void **)&t->rows, &b->cap_rows, t->nrows + 1, sizeof(*t->rows), CFI_MAX_ROWS)) {
        b->oom = t->nrows + 1 <= CFI_MAX_ROWS;
        return;
    }
    if (r.cfa == CFI_CFA_OTHER_REG)
        t->stats.unsupported++;
    if (r.cfa == CFI_CFA_EXPR || r.rbp >= CFI_RULE_AT_EXPR || r.ra >= CFI_RULE_AT_EXPR)
        t->stats.exprs++;
    t->rows[t->nrows++] = r;
}

static void set_rule(struct regs_state *s, uint64_t reg, struct rule r)
{
    if (reg == CFI_DW_RBP)
        s->rbp = r;
    else if (reg == CFI_DW_RA)
        s->ra = r;
}

static void set_cfa_reg(struct regs_state *s, uint64_t reg)
{
    s->cfa_reg = reg > 255 ? 255 : (uint8_t)reg;
    s->cfa = reg == CFI_DW_RSP ? CFI_CFA_RSP : reg == CFI_DW_RBP ? CFI_CFA_RBP : CFI_CFA_OTHER_REG;
}

/* Execute a CFA program (DWARF 5 §6.4.2). Rows are emitted as the location advances when
 * `b` is given (an FDE's instructions), not for a CIE's initial instructions. Returns false on a
 * malformed program. */
static bool run_cfa(struct builder *b, struct cur *c, const struct cie *ci, struct regs_state *s,
                    const struct regs_state *initial, uint64_t *loc, uint64_t end, uint8_t flags)
{
    struct regs_state stack[CFI_MAX_STATE];
    unsigned depth = 0;
    while (!c->bad && c->p < c->end) {
        uint8_t op = (uint8_t)get_n(c, 1);
        uint8_t hi = op & 0xc0, low = op & 0x3f;
        uint64_t adv = 0, to = 0, reg; /* advance by adv code units, or to a location */
        int64_t off;
        bool advance = false, set = false;
        if (hi == 0x40) { /* DW_CFA_advance_loc */
            adv = low;
            advance = true;
        } else if (hi == 0x80) { /* DW_CFA_offset */
            off = scaled((int64_t)uleb(c), ci->data_align);
            set_rule(s, low, (struct rule){CFI_RULE_AT, off});
        } else if (hi == 0xc0) { /* DW_CFA_restore */
            if (!initial)
                return false;
            if (low == CFI_DW_RBP)
                s->rbp = initial->rbp;
            else if (low == CFI_DW_RA)
                s->ra = initial->ra;
        } else {
            switch (op) {
            case 0x00: /* DW_CFA_nop */
                break;
            case 0x01: /* DW_CFA_set_loc */
                to = get_ptr(c, ci->fde_enc, 0);
                if (c->bad || to < *loc)
                    return false;
                advance = set = true;
                break;
            case 0x02: /* DW_CFA_advance_loc1 */
                adv = get_n(c, 1);
                advance = true;
                break;
            case 0x03: /* DW_CFA_advance_loc2 */
                adv = get_n(c, 2);
                advance = true;
                break;
            case 0x04: /* DW_CFA_advance_loc4 */
                adv = get_n(c, 4);
                advance = true;
                break;
            case 0x05: /* DW_CFA_offset_extended */
                reg = uleb(c);
                off = scaled((int64_t)uleb(c), ci->data_align);
                set_rule(s, reg, (struct rule){CFI_RULE_AT, off});
                break;
            case 0x11: /* DW_CFA_offset_extended_sf */
                reg = uleb(c);
                off = scaled(sleb(c), ci->data_align);
                set_rule(s, reg, (struct rule){CFI_RULE_AT, off});
                break;
            case 0x2f: /* DW_CFA_GNU_negative_offset_extended */
                reg = uleb(c);
                off = scaled((int64_t)uleb(c), -ci->data_align);
                set_rule(s, reg, (struct rule){CFI_RULE_AT, off});
                break;
            case 0x06: /* DW_CFA_restore_extended */
                reg = uleb(c);
                if (!initial)
                    return false;
                if (reg == CFI_DW_RBP)
                    s->rbp = initial->rbp;
                else if (reg == CFI_DW_RA)
                    s->ra = initial->ra;
                break;
            case 0x07: /* DW_CFA_undefined */
                set_rule(s, uleb(c), (struct rule){CFI_RULE_UNDEF, 0});
                break;
            case 0x08: /* DW_CFA_same_value */
                set_rule(s, uleb(c), (struct rule){CFI_RULE_SAME, 0});
                break;
            case 0x09: /* DW_CFA_register */
                reg = uleb(c);
                set_rule(s, reg, (struct rule){uleb(c) == reg ? CFI_RULE_SAME : CFI_RULE_OTHER, 0});
                break;
            case 0x0a: /* DW_CFA_remember_state */
                if (depth >= CFI_MAX_STATE)
                    return false;
                stack[depth++] = *s;
                break;
            case 0x0b: /* DW_CFA_restore_state */
                if (!depth)
                    return false;
                *s = stack[--depth];
                break;
            case 0x0c: /* DW_CFA_def_cfa */
                set_cfa_reg(s, uleb(c));
                s->cfa_off = (int64_t)uleb(c);
                break;
            case 0x12: /* DW_CFA_def_cfa_sf */
                set_cfa_reg(s, uleb(c));
                s->cfa_off = scaled(sleb(c), ci->data_align);
                break;
            case 0x0d: /* DW_CFA_def_cfa_register */
                set_cfa_reg(s, uleb(c));
                break;
            case 0x0e: /* DW_CFA_def_cfa_offset */
                s->cfa_off = (int64_t)uleb(c);
                break;
            case 0x13: /* DW_CFA_def_cfa_offset_sf */
                s->cfa_off = scaled(sleb(c), ci->data_align);
                break;
            case 0x0f: /* DW_CFA_def_cfa_expression */ {
                uint64_t len = uleb(c);
                if (!need(c, len))
                    return false;
                int64_t x = b ? add_expr(b, c->p, len) : -1;
                s->cfa = x < 0 ? CFI_CFA_OTHER_REG : CFI_CFA_EXPR;
                s->cfa_off = x < 0 ? 0 : x;
                c->p += len;
                c->va += len;
                break;
            }
            case 0x10:   /* DW_CFA_expression */
            case 0x16: { /* DW_CFA_val_expression */
                reg = uleb(c);
                uint64_t len = uleb(c);
                if (!need(c, len))
                    return false;
                if (reg == CFI_DW_RBP || reg == CFI_DW_RA) {
                    int64_t x = b ? add_expr(b, c->p, len) : -1;
                    uint8_t kind = op == 0x10 ? CFI_RULE_AT_EXPR : CFI_RULE_VAL_EXPR;
                    set_rule(s, reg, (struct rule){x < 0 ? CFI_RULE_OTHER : kind, x < 0 ? 0 : x});
                }
                c->p += len;
                c->va += len;
                break;
            }
            case 0x14: /* DW_CFA_val_offset */
                reg = uleb(c);
                off = scaled((int64_t)uleb(c), ci->data_align);
                set_rule(s, reg, (struct rule){CFI_RULE_VAL, off});
                break;
            case 0x15: /* DW_CFA_val_offset_sf */
                reg = uleb(c);
                off = scaled(sleb(c), ci->data_align);
                set_rule(s, reg, (struct rule){CFI_RULE_VAL, off});
                break;
            case 0x2e: /* DW_CFA_GNU_args_size: the outgoing arguments, no effect on the CFA */
                (void)uleb(c);
                break;
            default:
                return false; /* vendor or unknown instruction: its operands cannot be skipped */
            }
        }
        if (advance && !c->bad) {
            if (!b) /* a CIE's initial instructions do not advance */
                return false;
            if (!set)
                to = adv > (end - *loc) / ci->code_align ? end : *loc + adv * ci->code_align;
            emit(b, *loc, s, flags);
            if (to >= end) {
                *loc = end; /* past the FDE: what follows does not apply to its code */
                return true;
            }
            *loc = to;
        }
    }
    return !c->bad;
}

/* Parse the CIE at `va` (the FDE's pointer). */
static bool parse_cie(const struct cfi_src *src, uint64_t va, struct cie *ci, bool *absent)
{
    struct cur c;
    if (!cur_init(&c, src, va, 4, absent))
        return false;
    uint64_t len = get_n(&c, 4);
    if (len == 0 || len == 0xffffffffull) /* a 64-bit CIE in .eh_frame: not emitted by x86-64 */
        return false;
    if (!cur_init(&c, src, va + 4, len, absent))
        return false;
    if (get_n(&c, 4) != 0) /* CIE id: 0 in .eh_frame */
        return false;
    uint8_t version = (uint8_t)get_n(&c, 1);
    if (version != 1 && version != 3)
        return false;
    char aug[8];
    size_t n = 0;
    for (;;) {
        if (!need(&c, 1) || n + 1 >= sizeof(aug))
            return false;
        aug[n] = (char)get_n(&c, 1);
        if (!aug[n])
            break;
        n++;
    }
    *ci = (struct cie){.fde_enc = PE_ABSPTR};
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    ci->ra_reg = version == 1 ? get_n(&c, 1) : uleb(&c);
    if (aug[0] == 'z') {
        ci->has_aug_data = true;
        uint64_t alen = uleb(&c);
        if (!need(&c, alen))
            return false;
        struct cur a = {c.p, c.p + alen, c.va, false};
        for (size_t i = 1; i < n; i++) {
            switch (aug[i]) {
            case 'R':
                ci->fde_enc = (uint8_t)get_n(&a, 1);
                break;
            case 'L':
                (void)get_n(&a, 1); /* the LSDA's encoding: the walk needs no LSDA */
                break;
            case 'P': {
                uint8_t penc = (uint8_t)get_n(&a, 1);
                /* The personality routine's address: skipped by its size (indirect is fine). */
                (void)get_ptr(&a, (uint8_t)(penc & ~PE_INDIRECT), 0);
                break;
            }
            case 'S':
                ci->signal = true;
                break;
            case 'B': /* AArch64 BTI, meaningless here but harmless */
                break;
            default:
                return false; /* an unknown augmentation: its data cannot be interpreted */
            }
            if (a.bad)
                return false;
        }
        c.p += alen;
        c.va += alen;
    } else if (n) {
        return false; /* "eh" and other pre-'z' augmentations */
    }
    if (c.bad || ci->ra_reg != CFI_DW_RA || ci->code_align == 0 || ci->code_align > 64 ||
        ci->data_align < -256 || ci->data_align > 256)
        return false;
    ci->init = c;
    return true;
}

/* Compile one FDE at `va`. Returns 1 compiled, 0 absent (a page not present), -1 malformed or
 * over the work budget. */
static int compile_fde(struct builder *b, const struct cfi_src *src, uint64_t va)
{
    bool absent;
    struct cur c;
    if (!cur_init(&c, src, va, 4, &absent))
        return absent ? 0 : -1;
    uint64_t len = get_n(&c, 4);
    if (len == 0 || len == 0xffffffffull || len < 8 || len > b->budget)
        return -1;
    b->budget -= len;
    if (!cur_init(&c, src, va + 4, len, &absent))
        return absent ? 0 : -1;
    uint64_t id_at = c.va;
    uint64_t id = get_n(&c, 4);
    if (id == 0 || id > id_at)
        return -1; /* a CIE, or a pointer before the start of memory */
    struct cie ci;
    if (!parse_cie(src, id_at - id, &ci, &absent))
        return absent ? 0 : -1;
    uint64_t cie_len = (uint64_t)(ci.init.end - ci.init.p);
    if (cie_len > b->budget)
        return -1;
    b->budget -= cie_len;
    uint64_t start = get_ptr(&c, ci.fde_enc, 0);
    uint64_t range = get_ptr(&c, (uint8_t)(ci.fde_enc & 0x0f), 0);
    if (ci.has_aug_data) {
        uint64_t alen = uleb(&c);
        if (!need(&c, alen))
            return -1;
        c.p += alen;
        c.va += alen;
    }
    if (c.bad || range == 0 || range > (1ull << 30) || start < b->t->base ||
        start - b->t->base > UINT32_MAX - range)
        return -1;
    uint64_t end = start + range, loc = start;
    uint8_t flags = ci.signal ? CFI_ROW_SIGNAL : 0;
    /* The CIE's initial rules: on x86-64, CFA = RSP + 8 and the return address at CFA - 8. */
    struct regs_state init = {.cfa = CFI_CFA_OTHER_REG};
    struct cur ic = ci.init;
    if (!run_cfa(NULL, &ic, &ci, &init, NULL, &loc, end, flags))
        return -1;
    struct regs_state s = init;
    size_t rows_before = b->t->nrows;
    if (!run_cfa(b, &c, &ci, &s, &init, &loc, end, flags)) {
        b->t->nrows = rows_before; /* none of a malformed FDE's rows */
        return -1;
    }
    if (loc < end)
        emit(b, loc, &s, flags);
    /* The end of the FDE's code: no rules past it (unless another FDE starts there; the sort
     * below keeps that one). */
    struct regs_state none = {.cfa = CFI_CFA_NONE};
    emit(b, end, &none, 0);
    return 1;
}

static int by_pc(const void *a, const void *b)
{
    const struct cfi_row *x = a, *y = b;
    if (x->pc != y->pc)
        return x->pc < y->pc ? -1 : 1;
    /* At one address, a start of rules sorts after an end marker, so it wins below. */
    return (x->cfa != CFI_CFA_NONE) - (y->cfa != CFI_CFA_NONE);
}

/* Rows are emitted per FDE; FDEs are in any order. Sort (stable enough: each FDE's own rows
 * have increasing, distinct pcs) and keep the last row per address. */
static void finish(struct cfi_table *t)
{
    if (!t->nrows)
        return;
    qsort(t->rows, t->nrows, sizeof(*t->rows), by_pc);
    size_t o = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        if (o && t->rows[o - 1].pc == t->rows[i].pc)
            t->rows[o - 1] = t->rows[i];
        else
            t->rows[o++] = t->rows[i];
    }
    t->nrows = o;
}

/* The FDE addresses from .eh_frame_hdr's binary-search table; false if it cannot be used. */
static bool compile_from_hdr(struct builder *b, const struct cfi_src *src, uint64_t hdr,
                             uint64_t *eh_frame)
{
    bool absent;
    struct cur c;
    uint64_t avail =
        hdr >= src->vaddr && hdr - src->vaddr < src->len ? src->len - (hdr - src->vaddr) : 0;
    if (!cur_init(&c, src, hdr, avail < 32 ? avail : 32, &absent))
        return false;
    uint8_t version = (uint8_t)get_n(&c, 1), ptr_enc = (uint8_t)get_n(&c, 1),
            count_enc = (uint8_t)get_n(&c, 1), table_enc = (uint8_t)get_n(&c, 1);
    if (version != 1)
        return false;
    uint64_t ef = get_ptr(&c, ptr_enc, hdr);
    if (!c.bad && ef)
        *eh_frame = ef;
    if (count_enc == PE_OMIT || table_enc != (PE_DATAREL | PE_SDATA4))
        return false; /* no table, or one no x86-64 linker writes: scan .eh_frame instead */
    uint64_t count = get_ptr(&c, count_enc, hdr);
    unsigned esz = enc_size(table_enc);
    if (c.bad || count == 0 || count > CFI_MAX_INPUT / (2 * esz))
        return false;
    uint64_t table = c.va;
    if (count * 2 * esz > src->len)
        return false;
    for (uint64_t i = 0; i < count; i++) {
        struct cur e;
        if (!cur_init(&e, src, table + i * 2 * esz, 2 * esz, &absent)) {
            if (!absent)
                return i > 0;
            b->t->stats.fdes_absent++;
            continue;
        }
        (void)get_ptr(&e, table_enc, hdr);
        uint64_t fde = get_ptr(&e, table_enc, hdr);
        if (e.bad) {
            b->t->stats.fdes_bad++;
            continue;
        }
        int rc = compile_fde(b, src, fde);
        if (rc > 0)
            b->t->stats.fdes++;
        else if (rc == 0)
            b->t->stats.fdes_absent++;
        else
            b->t->stats.fdes_bad++;
        if (b->oom)
            return true;
    }
    return true;
}

/* Every FDE of .eh_frame in order, up to the zero terminator or the end of the source. */
static void compile_linear(struct builder *b, const struct cfi_src *src, uint64_t eh_frame)
{
    uint64_t va = eh_frame;
    for (uint64_t n = 0; n < CFI_MAX_INPUT / 8 && !b->oom; n++) {
        bool absent;
        struct cur c;
        if (!cur_init(&c, src, va, 8, &absent)) {
            if (absent)
                b->t->stats.fdes_absent++;
            return;
        }
        uint64_t len = get_n(&c, 4), id = get_n(&c, 4);
        if (len == 0 || len == 0xffffffffull || va + 4 + len < va)
            return;
        if (id != 0) {
            int rc = compile_fde(b, src, va);
            if (rc > 0)
                b->t->stats.fdes++;
            else if (rc == 0)
                b->t->stats.fdes_absent++;
            else
                b->t->stats.fdes_bad++;
        }
        va += 4 + len;
    }
}

int cfi_compile(const struct cfi_src *src, uint64_t hdr, uint64_t eh_frame, struct cfi_table *t,
                struct hv_err *err)
{
    *t = (struct cfi_table){.base = src->image_base};
    if (src->len > CFI_MAX_INPUT)
        return hv_errk(err, HV_ERR_LIMIT,
                       "call-frame information of %zu bytes: larger than hvprof reads", src->len);
    /* Row addresses are 32-bit offsets from the start of the image's lowest mapped page. */
    /* Every byte read about 8 times over (CIEs are shared by many FDEs), plus a floor. */
    struct builder b = {.t = t, .budget = 8 * (uint64_t)src->len + (1u << 20)};
    uint64_t ef = eh_frame;
    bool used_hdr = hdr && compile_from_hdr(&b, src, hdr, &ef);
    if (!used_hdr && ef && !b.oom)
        compile_linear(&b, src, ef);
    if (b.oom) {
        cfi_table_free(t);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory compiling call-frame information");
    }
    if (!used_hdr && !ef) {
        cfi_table_free(t);
        return hv_errf(err, "no readable .eh_frame_hdr or .eh_frame");
    }
    finish(t);
    return 0;
}

void cfi_table_free(struct cfi_table *t)
{
    free(t->rows);
    free(t->exprs);
    free(t->expr_bytes);
    t->rows = NULL;
    t->exprs = NULL;
    t->expr_bytes = NULL;
    t->nrows = t->nexprs = t->expr_len = 0;
}

const struct cfi_row *cfi_find(const struct cfi_table *t, uint64_t pc)
{
    if (!t->nrows || pc < t->base || pc - t->base > UINT32_MAX)
        return NULL;
    uint32_t off = (uint32_t)(pc - t->base);
    size_t lo = 0, hi = t->nrows; /* the last row with row.pc <= off */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].pc <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    const struct cfi_row *r = &t->rows[lo - 1];
    return r->cfa == CFI_CFA_NONE ? NULL : r;
}

size_t cfi_table_bytes(const struct cfi_table *t)
{
    return t->nrows * sizeof(*t->rows) + t->nexprs * sizeof(*t->exprs) + t->expr_len;
}
