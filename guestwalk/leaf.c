#include "guestwalk/leaf.h"

#include <stdbool.h>

#include <capstone/capstone.h>

#define X86_MAX_INSN 15 /* SDM Vol. 2 §2.3.11: an instruction is at most 15 bytes */

int gw_leaf_open(struct gw_leaf_decoder *d, struct hv_err *err)
{
    csh h;
    d->cs = 0;
    d->insn = NULL;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
        return hv_errf(err, "capstone: cannot open an x86-64 decoder");
    /* Detail off: id, size and bytes are all the classification needs, and detail would make
     * every decode fill a large structure. */
    cs_option(h, CS_OPT_DETAIL, CS_OPT_OFF);
    cs_insn *insn = cs_malloc(h);
    if (!insn) {
        cs_close(&h);
        return hv_errf(err, "capstone: cannot allocate an instruction");
    }
    d->cs = h;
    d->insn = insn;
    return 0;
}

void gw_leaf_close(struct gw_leaf_decoder *d)
{
    if (d->insn)
        cs_free(d->insn, 1);
    if (d->cs) {
        csh h = d->cs;
        cs_close(&h);
    }
    d->cs = 0;
    d->insn = NULL;
}

static bool is_push_rbp(const cs_insn *i)
{
    return i->id == X86_INS_PUSH && i->size == 1 && i->bytes[0] == 0x55;
}

/* mov rbp, rsp: 48 89 e5 (MOV r/m64, r64) or 48 8b ec (MOV r64, r/m64). */
static bool is_mov_rbp_rsp(const cs_insn *i)
{
    if (i->id != X86_INS_MOV || i->size != 3 || i->bytes[0] != 0x48)
        return false;
    return (i->bytes[1] == 0x89 && i->bytes[2] == 0xe5) ||
           (i->bytes[1] == 0x8b && i->bytes[2] == 0xec);
}

/* Cheap pre-check on the first bytes, so that capstone (whose decoder tables are cold in the
 * CPU cache at every sampling exit) only runs where a case is possible. Every instruction
 * classified below starts with one of these: push rbp (55), ret (c3, c2), jmp (e9, eb, ff),
 * endbr64 (f3), mov rbp, rsp (48 89 e5 / 48 8b ec), or a legacy prefix / REX before ret/jmp. */
static bool maybe_case(const uint8_t *c, size_t len)
{
    switch (c[0]) {
    case 0x55:
    case 0xc3:
    case 0xc2:
    case 0xe9:
    case 0xeb:
    case 0xff:
    case 0x26:
    case 0x2e:
    case 0x36:
    case 0x3e:
    case 0x64:
    case 0x65:
    case 0x66:
    case 0x67:
    case 0xf0:
    case 0xf2:
    case 0xf3:
        return true;
    default:
        break;
    }
    if ((c[0] & 0xf0) != 0x40 || len < 2) /* not a REX prefix */
        return false;
    switch (c[1]) {
    case 0xc3:
    case 0xc2:
    case 0xe9:
    case 0xeb:
    case 0xff:
    case 0x55:
        return true;
    case 0x89:
    case 0x8b:
        return c[0] == 0x48 && len >= 3 && (c[2] == 0xe5 || c[2] == 0xec);
    default:
        return false;
    }
}

enum gw_leaf gw_leaf_classify(struct gw_leaf_decoder *d, const uint8_t *code, size_t len,
                              uint64_t rip, int prev)
{
    if (!d->insn || len == 0 || !maybe_case(code, len))
        return GW_LEAF_NONE;
    cs_insn *insn = d->insn;
    const uint8_t *p = code;
    size_t n = len > X86_MAX_INSN + 4 ? X86_MAX_INSN + 4 : len; /* endbr64 + push rbp fit */
    uint64_t addr = rip;
    if (!cs_disasm_iter(d->cs, &p, &n, &addr, insn))
        return GW_LEAF_NONE;
    switch (insn->id) {
    case X86_INS_PUSH:
        return is_push_rbp(insn) ? GW_LEAF_ENTRY : GW_LEAF_NONE;
    case X86_INS_ENDBR64:
        /* CET-enabled code starts functions with endbr64; the prologue follows. */
        if (cs_disasm_iter(d->cs, &p, &n, &addr, insn) && is_push_rbp(insn))
            return GW_LEAF_ENTRY_ENDBR;
        return GW_LEAF_NONE;
    case X86_INS_MOV:
        /* Between push rbp and mov rbp, rsp: the old RBP is at [rsp], the return address above. */
        return is_mov_rbp_rsp(insn) && prev == 0x55 ? GW_LEAF_AFTER_PUSH : GW_LEAF_NONE;
    case X86_INS_RET:
        /* Near return (c3, c2 iw, with rep/bnd prefixes): the frame is already unlinked. */
        return GW_LEAF_RET;
    case X86_INS_JMP:
        /* Tail call right after pop rbp: the frame is unlinked, [rsp] is our return address. */
        return prev == 0x5d ? GW_LEAF_AFTER_POP : GW_LEAF_NONE;
    default:
        return GW_LEAF_NONE;
    }
}

unsigned gw_leaf_ret_offset(enum gw_leaf c)
{
    return c == GW_LEAF_AFTER_PUSH ? 8 : 0;
}

const char *gw_leaf_str(enum gw_leaf c)
{
    switch (c) {
    case GW_LEAF_NONE:
        return "none";
    case GW_LEAF_ENTRY:
        return "at push rbp";
    case GW_LEAF_ENTRY_ENDBR:
        return "at endbr64; push rbp";
    case GW_LEAF_AFTER_PUSH:
        return "after push rbp";
    case GW_LEAF_RET:
        return "at ret";
    case GW_LEAF_AFTER_POP:
        return "after pop rbp, at tail jump";
    case GW_LEAF_FRAMELESS:
        return "frameless function";
    case GW_LEAF_ORC:
        return "ORC table";
    case GW_LEAF_CFI:
        return "DWARF call-frame information";
    }
    return "unknown";
}
