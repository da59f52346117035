/* Leaf-frame repair: decide from the instruction at RIP (decoded with capstone) whether the
 * interrupted function's caller is still only on the stack, not in the RBP chain.
 *
 * A frame-pointer walk from RBP skips the caller when the sample hits before the function has
 * linked its frame or after it has unlinked it (docs/sources.md §4). The cases:
 *
 *   case               instruction at RIP                 return address   RBP is
 *   GW_LEAF_ENTRY      push rbp                           [rsp]            caller's
 *   GW_LEAF_ENTRY_ENDBR endbr64, then push rbp             [rsp]            caller's
 *   GW_LEAF_AFTER_PUSH mov rbp, rsp, byte before is push  [rsp + 8]        caller's
 *   GW_LEAF_RET        ret / ret imm16 (any prefixes)     [rsp]            caller's (after
 * pop/leave) GW_LEAF_AFTER_POP  jmp (tail call), byte before is    [rsp]            caller's pop
 * rbp (0x5d) or leave (0xc9)
 *
 * Anywhere else the function's own frame is linked, or the function has none at all: the
 * frameless scan (guestwalk/frameless.h) tells these apart by decoding forward to the `ret`
 * (GW_LEAF_FRAMELESS). Code without frame pointers anywhere leaves RBP to be whatever it holds:
 * no pattern helps the frames above (see docs/guestwalk.md). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum gw_leaf {
    GW_LEAF_NONE = 0,
    GW_LEAF_ENTRY,
    GW_LEAF_ENTRY_ENDBR,
    GW_LEAF_AFTER_PUSH,
    GW_LEAF_RET,
    GW_LEAF_AFTER_POP,
    /* Not an instruction pattern: a frameless function, its return address found by decoding
     * forward to its `ret` (guestwalk/frameless.h); at [rsp + depth]. */
    GW_LEAF_FRAMELESS,
    /* Not a repair: the kernel's ORC table described the interrupted function's frame. */
    GW_LEAF_ORC,
    /* Not a repair: the binary's DWARF call-frame information (.eh_frame) described it. */
    GW_LEAF_CFI,
};

/* Capstone state, opened once per walker (detail off) with one preallocated instruction, so
 * classification does no allocation. */
struct gw_leaf_decoder {
    size_t cs;  /* csh */
    void *insn; /* cs_insn * from cs_malloc */
};

int gw_leaf_open(struct gw_leaf_decoder *d, struct hv_err *err);
void gw_leaf_close(struct gw_leaf_decoder *d);

/* Classify the code at RIP. `code` holds `len` bytes starting at RIP (up to 16 are used; fewer
 * if the next page is unmapped); `prev` is the byte at RIP-1, or -1 if unknown. */
enum gw_leaf gw_leaf_classify(struct gw_leaf_decoder *d, const uint8_t *code, size_t len,
                              uint64_t rip, int prev);

/* Offset from RSP of the return address for a case (0 or 8); meaningless for GW_LEAF_NONE. */
unsigned gw_leaf_ret_offset(enum gw_leaf c);

const char *gw_leaf_str(enum gw_leaf c);
