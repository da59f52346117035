#include "guestwalk/frameless.h"

#include <string.h>

#include <capstone/capstone.h>

#define X86_MAX_INSN 15 /* SDM Vol. 2 §2.3.11 */
#define WINDOW       64 /* code bytes fetched at a time */

/* One path through the function: where it is and what it has pushed since the entry. */
struct path {
    uint64_t pc;
    int64_t depth;      /* bytes pushed since the interrupted PC (negative: popped) */
    unsigned rbp_saved; /* push rbp on this path not yet popped */
    int64_t frame;      /* depth at mov rbp, rsp on this path, -1 if none */
};

struct scan {
    struct gw_leaf_decoder *d;
    gw_code_fetch_fn fetch;
    void *ctx;
    uint8_t buf[WINDOW];
    uint64_t buf_va;
    size_t buf_len;
    struct path pending[GW_FRAMELESS_MAX_PENDING];
    unsigned npending;
    uint64_t jumped[GW_FRAMELESS_MAX_JUMPS];
    unsigned njumped;
};

/* The instruction at va, decoded: its bytes (in s->buf) and length; NULL if unreadable. */
static const uint8_t *decode(struct scan *s, uint64_t va, unsigned *size)
{
    if (va < s->buf_va || va - s->buf_va + X86_MAX_INSN > s->buf_len) {
        s->buf_va = va;
        s->buf_len = s->fetch(s->ctx, va, s->buf, WINDOW);
    }
    if (va < s->buf_va || va - s->buf_va >= s->buf_len)
        return NULL;
    const uint8_t *p = s->buf + (va - s->buf_va);
    size_t n = s->buf_len - (size_t)(va - s->buf_va);
    uint64_t addr = va;
    const uint8_t *code = p;
    if (!cs_disasm_iter(s->d->cs, &code, &n, &addr, s->d->insn))
        return NULL;
    *size = ((cs_insn *)s->d->insn)->size;
    return p;
}

/* Prefixes and opcode of an instruction (SDM Vol. 2 §2.1, §2.2.1). */
struct op {
    unsigned rex;     /* the REX byte, 0 if none */
    unsigned opcode;  /* one byte, or 0x0f00 | second byte */
    const uint8_t *m; /* the ModRM byte and what follows */
    size_t mlen;      /* bytes left from m */
};

static bool parse_op(const uint8_t *p, unsigned size, struct op *o)
{
    unsigned i = 0;
    while (i < size) {
        uint8_t b = p[i];
        if (b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e ||
            b == 0x26 || b == 0x64 || b == 0x65 || b == 0x66 || b == 0x67)
            i++;
        else
            break;
    }
    o->rex = 0;
    if (i < size && (p[i] & 0xf0) == 0x40)
        o->rex = p[i++];
    if (i >= size)
        return false;
    o->opcode = p[i++];
    if (o->opcode == 0x0f) {
        if (i >= size)
            return false;
        o->opcode = 0x0f00 | p[i++];
    }
    o->m = p + i;
    o->mlen = size - i;
    return true;
}

static unsigned modrm_mod(const struct op *o)
{
    return o->mlen ? o->m[0] >> 6 : 0;
}
static unsigned modrm_reg(const struct op *o)
{
    return o->mlen ? ((o->m[0] >> 3) & 7) | ((o->rex & 4) ? 8 : 0) : 0;
}
static unsigned modrm_rm(const struct op *o)
{
    return o->mlen ? (o->m[0] & 7) | ((o->rex & 1) ? 8 : 0) : 0;
}

#define RSP 4
#define RBP 5

/* Does the instruction write RSP in a way this scan does not model? (One-byte ALU and MOV
 * forms whose destination is RSP; the modelled ones are handled before this is asked.) */
static bool writes_rsp(const struct op *o)
{
    unsigned op = o->opcode;
    bool rm_dest = modrm_mod(o) == 3 && modrm_rm(o) == RSP;
    if (op < 0x40 && (op & 7) < 4) /* add/or/adc/sbb/and/sub/xor/cmp, ModRM forms */
        return (op & 0x38) != 0x38 && ((op & 2) ? modrm_reg(o) == RSP : rm_dest);
    switch (op) {
    case 0x87: /* xchg */
        return modrm_reg(o) == RSP || rm_dest;
    case 0x88:
    case 0x89:
    case 0xc7:
    case 0xc1:
    case 0xd1:
    case 0xd3:
    case 0x81:
    case 0x83:
        return rm_dest;
    case 0x8a:
    case 0x8b:
    case 0x8d:
    case 0x63:
    case 0x0faf:
    case 0x0fb6:
    case 0x0fb7:
    case 0x0fbe:
    case 0x0fbf:
        return modrm_reg(o) == RSP;
    case 0xf7:
    case 0xff: /* not/neg/mul/div, inc/dec (ff /0 /1) */
        return rm_dest && (op == 0xf7 || modrm_reg(o) <= 1);
    case 0xbc: /* mov esp/rsp, imm (b8 + 4, without REX.B) */
        return !(o->rex & 1);
    default:
        return op >= 0x0f40 && op <= 0x0f4f && modrm_reg(o) == RSP; /* cmovcc */
    }
}

static int64_t rel(const uint8_t *p, unsigned n)
{
    if (n == 1)
        return (int8_t)p[0];
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* What follows a call that does not return is another function or padding. */
static bool dead_after_call(const struct op *o, const uint8_t *p)
{
    switch (o->opcode) {
    case 0x90:   /* nop */
    case 0x0f1f: /* nopl */
    case 0xcc:   /* int3 */
    case 0xf4:   /* hlt */
    case 0x0f0b: /* ud2 */
        return true;
    case 0x0f1e: /* endbr64: f3 0f 1e fa */
        return p[0] == 0xf3;
    default:
        return false;
    }
}

static bool take_pending(struct scan *s, struct path *pa)
{
    if (!s->npending)
        return false;
    *pa = s->pending[--s->npending];
    return true;
}

enum gw_frame_shape gw_frameless_scan(struct gw_leaf_decoder *d, gw_code_fetch_fn fetch, void *ctx,
                                      uint64_t rip, uint32_t *depth)
{
    if (!d->insn)
        return GW_SHAPE_UNKNOWN;
    struct scan s = {.d = d, .fetch = fetch, .ctx = ctx, .buf_va = 1, .buf_len = 0};
    struct path pa = {rip, 0, 0, -1};
    bool after_call = false;
    for (unsigned budget = GW_FRAMELESS_MAX_INSNS; budget; budget--) {
        unsigned size;
        struct op o;
        const uint8_t *p = decode(&s, pa.pc, &size);
        if (!p || !parse_op(p, size, &o))
            goto dead;
        uint64_t next = pa.pc + size;
        if (after_call && dead_after_call(&o, p))
            goto dead;
        after_call = false;
        unsigned op = o.opcode;
        if (op >= 0x50 && op <= 0x57) { /* push r64 */
            if (op == 0x55 && !(o.rex & 1))
                pa.rbp_saved++;
            pa.depth += 8;
        } else if (op >= 0x58 && op <= 0x5f) { /* pop r64 */
            unsigned reg = (op - 0x58) | ((o.rex & 1) ? 8 : 0);
            if (reg == RSP)
                return GW_SHAPE_UNKNOWN;
            if (reg == RBP) {
                if (!pa.rbp_saved)
                    return GW_SHAPE_FRAMED;
                pa.rbp_saved--;
                pa.frame = -1;
            }
            pa.depth -= 8;
        } else if (op == 0x6a || op == 0x68 || op == 0x9c) { /* push imm, pushfq */
            pa.depth += 8;
        } else if (op == 0x9d) { /* popfq */
            pa.depth -= 8;
        } else if (op == 0xff && modrm_reg(&o) == 6) { /* push r/m64 */
            pa.depth += 8;
        } else if (op == 0x8f && modrm_reg(&o) == 0) { /* pop r/m64 */
            pa.depth -= 8;
        } else if (op == 0xc9) { /* leave: mov rsp, rbp; pop rbp */
            if (!pa.rbp_saved)
                return GW_SHAPE_FRAMED;
            if (pa.frame < 0)
                return GW_SHAPE_UNKNOWN;
            pa.depth = pa.frame - 8;
            pa.rbp_saved--;
            pa.frame = -1;
        } else if (op == 0xc3 || op == 0xc2) { /* ret */
            /* What the path popped beyond what it pushed lay between RSP and the return
             * address at the interrupted PC. */
            int64_t above = -pa.depth;
            if (pa.rbp_saved || above < 0 || (above & 7) || above > GW_FRAMELESS_MAX_DEPTH)
                return GW_SHAPE_UNKNOWN;
            *depth = (uint32_t)above;
            return GW_SHAPE_FRAMELESS;
        } else if ((op == 0x89 || op == 0x8b) && modrm_mod(&o) == 3) {
            /* mov between registers: the frame link (mov rbp, rsp) and its undoing. */
            unsigned dst = op == 0x89 ? modrm_rm(&o) : modrm_reg(&o);
            unsigned src = op == 0x89 ? modrm_reg(&o) : modrm_rm(&o);
            if (dst == RBP && src == RSP) {
                if (!pa.rbp_saved)
                    return GW_SHAPE_UNKNOWN;
                pa.frame = pa.depth;
            } else if (dst == RSP) {
                if (src != RBP || pa.frame < 0)
                    return GW_SHAPE_UNKNOWN;
                pa.depth = pa.frame;
            }
        } else if ((op == 0x83 || op == 0x81) && modrm_mod(&o) == 3 && modrm_rm(&o) == RSP) {
            unsigned n = op == 0x83 ? 1 : 4;
            if (o.mlen < 1 + n)
                return GW_SHAPE_UNKNOWN;
            int64_t imm = rel(o.m + 1, n);
            if (modrm_reg(&o) == 0)
                pa.depth -= imm; /* add rsp, imm */
            else if (modrm_reg(&o) == 5)
                pa.depth += imm; /* sub rsp, imm */
            else
                return GW_SHAPE_UNKNOWN; /* and rsp (realignment), or, ... */
        } else if (op == 0x8d && modrm_reg(&o) == RSP) {
            /* lea rsp, [rsp + disp8/disp32]: ModRM 0x64 / 0xa4 with SIB 0x24 */
            if (o.mlen >= 3 && o.m[1] == 0x24 && (o.m[0] == 0x64 || o.m[0] == 0xa4)) {
                unsigned n = o.m[0] == 0x64 ? 1 : 4;
                if (o.mlen < 2 + n)
                    return GW_SHAPE_UNKNOWN;
                pa.depth -= rel(o.m + 2, n);
            } else {
                return GW_SHAPE_UNKNOWN;
            }
        } else if (op == 0xe8 || (op == 0xff && (modrm_reg(&o) & 7) == 2)) {
            after_call = true;                 /* call: returns here with the same depth */
        } else if (op == 0xeb || op == 0xe9) { /* jmp rel8 / rel32 */
            uint64_t target = next + (uint64_t)rel(o.m, op == 0xeb ? 1 : 4);
            bool seen = false;
            for (unsigned i = 0; i < s.njumped; i++)
                seen |= s.jumped[i] == target;
            if (seen || s.njumped == GW_FRAMELESS_MAX_JUMPS)
                goto dead;
            s.jumped[s.njumped++] = target;
            pa.pc = target;
            continue;
        } else if ((op >= 0x70 && op <= 0x7f) || (op >= 0x0f80 && op <= 0x0f8f) ||
                   (op >= 0xe0 && op <= 0xe3)) { /* jcc, loop, jrcxz */
            uint64_t target = next + (uint64_t)rel(o.m, op >= 0x0f80 ? 4 : 1);
            if (target > next && s.npending < GW_FRAMELESS_MAX_PENDING) {
                struct path br = pa;
                br.pc = target;
                s.pending[s.npending++] = br;
            }
        } else if (op == 0xff && (modrm_reg(&o) & 7) >= 4) { /* jmp / jmp far indirect */
            goto dead;
        } else if (op == 0xcc || op == 0xf4 || op == 0x0f0b || op == 0xcf || op == 0x0f07 ||
                   op == 0xca || op == 0xcb) { /* int3, hlt, ud2, iret, sysret, retf */
            goto dead;
        } else if (writes_rsp(&o)) {
            return GW_SHAPE_UNKNOWN;
        }
        pa.pc = next;
        continue;
    dead:
        after_call = false;
        if (!take_pending(&s, &pa))
            return GW_SHAPE_UNKNOWN;
    }
    return GW_SHAPE_UNKNOWN;
}

static size_t slot_of(uint64_t root, uint64_t rip)
{
    uint64_t h = (rip ^ (root >> 12) * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
    return (size_t)(h >> 54) & (GW_SHAPE_CACHE - 1);
}

bool gw_shape_cache_get(const struct gw_shape_cache *c, uint64_t root, uint64_t rip,
                        const uint8_t code[16], enum gw_frame_shape *shape, uint32_t *depth)
{
    const struct gw_shape_entry *e = &c->e[slot_of(root, rip)];
    if (!e->valid || e->rip != rip || e->root != root || memcmp(e->code, code, 16))
        return false;
    *shape = (enum gw_frame_shape)e->shape;
    *depth = e->depth;
    return true;
}

void gw_shape_cache_put(struct gw_shape_cache *c, uint64_t root, uint64_t rip,
                        const uint8_t code[16], enum gw_frame_shape shape, uint32_t depth)
{
    struct gw_shape_entry *e = &c->e[slot_of(root, rip)];
    e->rip = rip;
    e->root = root;
    memcpy(e->code, code, 16);
    e->shape = (uint8_t)shape;
    e->depth = depth;
    e->valid = true;
}

bool gw_after_call(const uint8_t *b, size_t n)
{
    /* call rel32: e8 xx xx xx xx */
    if (n >= 5 && b[n - 5] == 0xe8)
        return true;
    /* call r/m64 (ff /2), optionally after a REX prefix: ModRM mod=11 (2 bytes), mod=01 with a
     * disp8 (3, or 4 with SIB), mod=10 with a disp32 (6, or 7 with SIB), or mod=00 rm=101 (RIP +
     * disp32, 6) and mod=00 with SIB (3, or 7 with an absolute disp32). */
    static const struct {
        unsigned len;  /* bytes from ff to the end */
        uint8_t mask;  /* on the ModRM byte */
        uint8_t value; /* reg = 2 and the form's mod / rm */
    } forms[] = {
        {2, 0xf8, 0xd0}, /* ff d0+r        call r64 */
        {2, 0xf8, 0x10}, /* ff 10..17 (rm != 100, 101): call [r64] */
        {3, 0xf8, 0x50}, /* ff 50+r d8     call [r64 + d8] */
        {3, 0xff, 0x14}, /* ff 14 sib      call [sib] */
        {4, 0xff, 0x54}, /* ff 54 sib d8   call [sib + d8] */
        {6, 0xff, 0x15}, /* ff 15 d32      call [rip + d32] */
        {6, 0xf8, 0x90}, /* ff 90+r d32    call [r64 + d32] */
        {7, 0xff, 0x94}, /* ff 94 sib d32  call [sib + d32] */
        {7, 0xff, 0x14}, /* ff 14 25 d32   call [d32] */
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        unsigned len = forms[i].len;
        if (n < len)
            continue;
        const uint8_t *c = b + n - len;
        if (c[0] != 0xff || (c[1] & forms[i].mask) != forms[i].value)
            continue;
        if (len == 2 && forms[i].value == 0x10 && ((c[1] & 7) == 4 || (c[1] & 7) == 5))
            continue;
        return true;
    }
    return false;
}
