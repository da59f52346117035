/* DWARF expression evaluation for call-frame rules. Operation encodings: DWARF 5 §7.7.1,
 * Table 7.9. */
#include "guestwalk/cfi_expr.h"

struct ev {
    const uint8_t *p, *end;
    uint64_t st[CFI_EXPR_MAX_STACK];
    unsigned n;
    bool bad;
};

static uint64_t u(struct ev *e, unsigned size)
{
    if ((size_t)(e->end - e->p) < size) {
        e->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++)
        v |= (uint64_t)e->p[i] << (8 * i);
    e->p += size;
    return v;
}

static uint64_t uleb(struct ev *e)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (e->p >= e->end)
            break;
        uint8_t b = *e->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    e->bad = true;
    return 0;
}

static int64_t sleb(struct ev *e)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (e->p >= e->end || shift >= 70) {
            e->bad = true;
            return 0;
        }
        uint8_t b = *e->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= ~0ull << shift;
            return (int64_t)v;
        }
    }
}

static void push(struct ev *e, uint64_t v)
{
    if (e->n >= CFI_EXPR_MAX_STACK) {
        e->bad = true;
        return;
    }
    e->st[e->n++] = v;
}

static uint64_t pop(struct ev *e)
{
    if (!e->n) {
        e->bad = true;
        return 0;
    }
    return e->st[--e->n];
}

static bool reg_value(const struct cfi_expr_regs *r, unsigned reg, uint64_t *v)
{
    switch (reg) {
    case 6:
        *v = r->rbp;
        return r->rbp_known;
    case 7:
        *v = r->rsp;
        return true;
    case 16:
        *v = r->rip;
        return true;
    default:
        return false;
    }
}

bool cfi_expr_eval(const uint8_t *p, size_t len, const struct cfi_expr_regs *regs, bool push_first,
                   uint64_t initial, cfi_expr_read_fn read, void *ctx, uint64_t *out)
{
    struct ev e = {.p = p, .end = p + len};
    const uint8_t *start = p;
    if (push_first)
        push(&e, initial);
    for (unsigned ops = 0; e.p < e.end && !e.bad; ops++) {
        if (ops >= CFI_EXPR_MAX_OPS)
            return false;
        uint8_t op = *e.p++;
        uint64_t a, b, v;
        if (op >= 0x30 && op <= 0x4f) { /* DW_OP_lit0..31 */
            push(&e, op - 0x30u);
            continue;
        }
        if (op >= 0x70 && op <= 0x8f) { /* DW_OP_breg0..31 */
            int64_t off = sleb(&e);
            if (!reg_value(regs, op - 0x70u, &v))
                return false;
            push(&e, v + (uint64_t)off);
            continue;
        }
        switch (op) {
        case 0x08: /* DW_OP_const1u */
            push(&e, u(&e, 1));
            break;
        case 0x09: /* DW_OP_const1s */
            push(&e, (uint64_t)(int64_t)(int8_t)u(&e, 1));
            break;
        case 0x0a: /* DW_OP_const2u */
            push(&e, u(&e, 2));
            break;
        case 0x0b: /* DW_OP_const2s */
            push(&e, (uint64_t)(int64_t)(int16_t)u(&e, 2));
            break;
        case 0x0c: /* DW_OP_const4u */
            push(&e, u(&e, 4));
            break;
        case 0x0d: /* DW_OP_const4s */
            push(&e, (uint64_t)(int64_t)(int32_t)u(&e, 4));
            break;
        case 0x0e: /* DW_OP_const8u */
        case 0x0f: /* DW_OP_const8s */
            push(&e, u(&e, 8));
            break;
        case 0x10: /* DW_OP_constu */
            push(&e, uleb(&e));
            break;
        case 0x11: /* DW_OP_consts */
            push(&e, (uint64_t)sleb(&e));
            break;
        case 0x06: /* DW_OP_deref */
            a = pop(&e);
            if (e.bad || !read(ctx, a, 8, &v))
                return false;
            push(&e, v);
            break;
        case 0x94: { /* DW_OP_deref_size */
            unsigned size = (unsigned)u(&e, 1);
            a = pop(&e);
            if (e.bad || size == 0 || size > 8 || !read(ctx, a, size, &v))
                return false;
            push(&e, v);
            break;
        }
        case 0x12: /* DW_OP_dup */
            a = pop(&e);
            push(&e, a);
            push(&e, a);
            break;
        case 0x13: /* DW_OP_drop */
            (void)pop(&e);
            break;
        case 0x14: /* DW_OP_over */
            if (e.n < 2)
                return false;
            push(&e, e.st[e.n - 2]);
            break;
        case 0x15: /* DW_OP_pick */
            a = u(&e, 1);
            if (a >= e.n)
                return false;
            push(&e, e.st[e.n - 1 - a]);
            break;
        case 0x16: /* DW_OP_swap */
            a = pop(&e);
            b = pop(&e);
            push(&e, a);
            push(&e, b);
            break;
        case 0x17: /* DW_OP_rot */
            if (e.n < 3)
                return false;
            a = e.st[e.n - 1];
            e.st[e.n - 1] = e.st[e.n - 2];
            e.st[e.n - 2] = e.st[e.n - 3];
            e.st[e.n - 3] = a;
            break;
        case 0x19: /* DW_OP_abs */
            a = pop(&e);
            push(&e, (int64_t)a < 0 ? 0 - a : a);
            break;
        case 0x1f: /* DW_OP_neg */
            push(&e, 0 - pop(&e));
            break;
        case 0x20: /* DW_OP_not */
            push(&e, ~pop(&e));
            break;
        case 0x23: /* DW_OP_plus_uconst */
            a = pop(&e);
            push(&e, a + uleb(&e));
            break;
        case 0x1a:       /* and */
        case 0x1b:       /* div (signed) */
        case 0x1c:       /* minus */
        case 0x1d:       /* mod */
        case 0x1e:       /* mul */
        case 0x21:       /* or */
        case 0x22:       /* plus */
        case 0x24:       /* shl */
        case 0x25:       /* shr */
        case 0x26:       /* shra */
        case 0x27:       /* xor */
        case 0x29:       /* eq */
        case 0x2a:       /* ge */
        case 0x2b:       /* gt */
        case 0x2c:       /* le */
        case 0x2d:       /* lt */
        case 0x2e:       /* ne */
            b = pop(&e); /* the top: the second operand */
            a = pop(&e);
            if (e.bad)
                return false;
            switch (op) {
            case 0x1a:
                v = a & b;
                break;
            case 0x1b:
                if (b == 0 || ((int64_t)a == INT64_MIN && (int64_t)b == -1))
                    return false;
                v = (uint64_t)((int64_t)a / (int64_t)b);
                break;
            case 0x1c:
                v = a - b;
                break;
            case 0x1d:
                if (b == 0)
                    return false;
                v = a % b;
                break;
            case 0x1e:
                v = a * b;
                break;
            case 0x21:
                v = a | b;
                break;
            case 0x22:
                v = a + b;
                break;
            case 0x24:
                v = b >= 64 ? 0 : a << b;
                break;
            case 0x25:
                v = b >= 64 ? 0 : a >> b;
                break;
            case 0x26:
                v = (uint64_t)((int64_t)a >> (b >= 64 ? 63 : b));
                break;
            case 0x27:
                v = a ^ b;
                break;
            case 0x29:
                v = a == b;
                break;
            case 0x2a:
                v = (int64_t)a >= (int64_t)b;
                break;
            case 0x2b:
                v = (int64_t)a > (int64_t)b;
                break;
            case 0x2c:
                v = (int64_t)a <= (int64_t)b;
                break;
            case 0x2d:
                v = (int64_t)a < (int64_t)b;
                break;
            default:
                v = a != b;
                break;
            }
            push(&e, v);
            break;
        case 0x2f:   /* DW_OP_skip */
        case 0x28: { /* DW_OP_bra */
            int16_t d = (int16_t)u(&e, 2);
            if (e.bad)
                return false;
            if (op == 0x28 && pop(&e) == 0)
                break;
            ptrdiff_t to = (e.p - start) + d;
            if (to < 0 || (size_t)to > len)
                return false;
            e.p = start + to;
            break;
        }
        case 0x96: /* DW_OP_nop */
            break;
        default:
            return false; /* register locations, TLS, calls, typed stack: not an address */
        }
    }
    if (e.bad || !e.n)
        return false;
    *out = e.st[e.n - 1];
    return true;
}
