/* Frame-pointer unwinding of a stopped vCPU's user (CPL 3) or kernel (CPL 0) stack.
 *
 * Output convention: pc[0] is the exact interrupted PC; pc[1..] are return addresses, kept as
 * such (a symbolizer looks up pc - 1 for them). When leaf repair applied, pc[1] is the return
 * address read from the stack (st->leaf says which case).
 *
 * Validation (docs/sources.md §4): every frame pointer is 8-byte aligned, strictly above
 * the previous frame record (so the walk cannot cycle), inside [RSP, RSP + stack_window) and at
 * most max_frame above the previous frame; every return address is canonical and in the half of
 * the address space of the walk (lower for CPL 3, upper for CPL 0); the depth is capped. */
#pragma once

#include <stdint.h>

#include "guestwalk/walker.h"

enum gw_stop {
    GW_STOP_NONE = 0,         /* not walked */
    GW_STOP_CHAIN_END,        /* frame pointer 0 or return address 0: the normal end */
    GW_STOP_INVALID_FRAME,    /* a frame failed validation: see gw_stack.bad */
    GW_STOP_UNMAPPED,         /* a stack read failed translation: see gw_stack.fault */
    GW_STOP_DEPTH_CAP,        /* the frame array is full (min of capacity and max_depth) */
    GW_STOP_UNSUPPORTED_MODE, /* the vCPU is not in long mode: see gw_stack.fault */
    GW_STOP_NO_UNWIND_INFO,   /* table-driven unwinders: no usable entry for a PC (bad_value) */
    GW_STOP_UNWIND_RULE,      /* DWARF CFI: a rule the walk cannot evaluate (a CFA in an untracked
                               * register, an expression it refuses; bad_value = the PC) */
};

enum gw_bad_frame {
    GW_BAD_NONE = 0,
    GW_BAD_MISALIGNED,     /* frame pointer not 8-byte aligned */
    GW_BAD_NOT_INCREASING, /* frame pointer not above the previous frame record (or below RSP) */
    GW_BAD_OUTSIDE_WINDOW, /* beyond RSP + stack_window, or frame larger than max_frame */
    GW_BAD_WRONG_HALF,     /* frame pointer or return address in the other half */
    GW_BAD_NON_CANONICAL,  /* frame pointer or return address not canonical */
    GW_BAD_NOT_AFTER_CALL, /* a return address whose code does not follow a call */
};

/* Registers to start a walk from. `user` selects the user half and user-mode access checks. */
struct gw_regs {
    uint64_t rip, rsp, rbp;
    bool user;
};

struct gw_stack {
    uint64_t *pc;      /* caller-provided array */
    unsigned capacity; /* entries in pc[] */
    unsigned count;    /* frames written */
    enum gw_stop stop;
    enum gw_bad_frame bad; /* for GW_STOP_INVALID_FRAME */
    uint64_t bad_value;    /* the offending frame pointer or return address */
    struct pt_fault fault; /* for GW_STOP_UNMAPPED and GW_STOP_UNSUPPORTED_MODE */
    enum gw_leaf leaf;     /* leaf repair applied (GW_LEAF_NONE if not) */
    /* Kernel walks that reached the frame where the thread entered the kernel from user mode
     * (Linux ORC: the pt_regs of a system call, interrupt or exception): the user registers
     * saved there. */
    bool user_entry;
    struct gw_regs user_regs;
    uint64_t user_regs_at; /* the address of the frame that held them (Linux: its pt_regs) */
    /* DWARF CFI walks (guestwalk/cfi_unwind.h): frames whose caller the tables gave, and walks
     * that met a PC inside a module with tables but no rule for it (frame pointers there), and
     * walks that met a PC outside every module of the map (code whose tables are not compiled
     * yet): the exact PC, or a return address the tables gave; one read by frame pointers
     * through code without tables may be any value on the stack, and does not count. */
    uint16_t cfi_frames;
    bool cfi_gap;
    bool cfi_outside;
    /* Frames past an interrupt or exception frame (Linux ORC: pt_regs inside the kernel): bit i
     * set means pc[i] is the exact interrupted PC, not a return address (1 <= i < 32). */
    uint32_t exact;
};

#define GW_STACK_INIT(array, cap) ((struct gw_stack){.pc = (array), .capacity = (cap)})

/* Clear what a walk fills in (an unwinder's first step). */
static inline void gw_stack_reset(struct gw_stack *st)
{
    st->count = 0;
    st->stop = GW_STOP_NONE;
    st->bad = GW_BAD_NONE;
    st->bad_value = 0;
    st->leaf = GW_LEAF_NONE;
    st->user_entry = false;
    st->user_regs_at = 0;
    st->cfi_frames = 0;
    st->cfi_gap = false;
    st->cfi_outside = false;
    st->exact = 0;
    st->fault = (struct pt_fault){0};
}

/* Walk the stack of the state given to gw_walker_begin (user walk iff cpl == 3). Returns the
 * number of frames (also in st->count); st->stop says why it ended. */
unsigned gw_unwind(struct gw_walker *w, struct gw_stack *st);

/* Walk from explicit registers within the current stop (e.g. user registers saved in a kernel
 * entry frame). */
unsigned gw_unwind_regs(struct gw_walker *w, const struct gw_regs *r, struct gw_stack *st);

/* For other unwinders (guestwalk/cfi_unwind.c): one 8-byte stack read through the walker's
 * cache; 0, or -1 with *f. */
int gw_stack_read_u64(struct gw_walker *w, uint64_t va, bool user, uint64_t *v, struct pt_fault *f);

/* Leaf repair of frame 0 (already in st) without unwind tables: when the interrupted function's
 * caller is only on the stack (the cases of guestwalk/leaf.h, or a frameless function), append
 * its return address to st (st->leaf says how) and return the caller's RSP; else return
 * r->rsp and append nothing. */
uint64_t gw_unwind_leaf(struct gw_walker *w, const struct gw_regs *r, struct gw_stack *st);

const char *gw_stop_reason_str(enum gw_stop s);
const char *gw_bad_frame_str(enum gw_bad_frame b);
