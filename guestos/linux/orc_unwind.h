/* Unwinding a Linux guest's kernel stack with the kernel's own ORC tables (docs/orc.md),
 * paraphrasing arch/x86/kernel/unwind_orc.c's unwind_next_frame on the hypervisor's side: every
 * read goes through the walker (bounded, cached, the guest's page tables), every value read is
 * the guest's and is checked before it is used.
 *
 * The walk crosses what a real kernel stack holds: ordinary frames, the IRQ stack (the ORC entry
 * after the switch finds the interrupted stack pointer indirectly, SP_INDIRECT), exception
 * stacks and the pt_regs of interrupts and exceptions taken in the kernel (REGS and
 * REGS_PARTIAL entries), and ends at the frame where the task entered the kernel from user mode:
 * its pt_regs' user RIP/RSP/RBP go into gw_stack.user_regs. Kernel threads end at their
 * END_OF_STACK entry (ret_from_fork).
 *
 * Per frame: one table lookup (lx_orc_find: a block index and a binary search of at most the
 * entries of 256 bytes of code) and at most four guest reads (the CFA register, the return
 * address or the 168-byte pt_regs, the saved frame pointer). At most max_depth frames; the stack
 * pointer must rise from frame to frame except across a stack switch (an indirect CFA or a
 * pt_regs frame), of which a walk takes at most LX_ORC_MAX_SWITCHES. */
#pragma once

#include <stdatomic.h>

#include "guestos/linux/orc.h"
#include "guestwalk/unwinder.h"

/* Entry, IRQ and exception stacks on the way down to a task stack, and one spare. */
#define LX_ORC_MAX_SWITCHES 4

/* Loaded modules' tables at one moment: sorted by code address, not overlapping. Immutable once
 * published; a newer set replaces it (the Linux layer keeps the old ones until it closes). */
#define LX_ORC_MAX_MODULES 512
struct lx_orc_module {
    uint64_t lo, hi; /* the module's code region */
    const struct lx_orc_table *t;
};
struct lx_orc_mods {
    size_t n;
    struct lx_orc_module m[];
};

/* The tables an ORC walk looks up: the kernel image's (read-only once published to the exit
 * path), and the modules' set of the moment. */
struct lx_orc {
    struct lx_orc_layout layout;
    struct lx_orc_table vmlinux;
    _Atomic(const struct lx_orc_mods *) mods; /* NULL: no module tables */
};

/* Walk the kernel stack from r (CPL 0). Fills st as gw_unwind_regs does, st->leaf = GW_LEAF_ORC
 * when frame 1 came from a table entry; a PC without an entry stops with GW_STOP_NO_UNWIND_INFO
 * (bad_value = that PC). */
unsigned lx_orc_unwind(const struct lx_orc *o, struct gw_walker *w, const struct gw_regs *r,
                       struct gw_stack *st);

/* pt_regs (arch/x86/include/asm/ptrace.h; the same 4.14-6.19): what the walk reads. */
enum {
    LX_PT_R13 = 16,
    LX_PT_BP = 32,
    LX_PT_R10 = 56,
    LX_PT_AX = 80,
    LX_PT_DX = 96,
    LX_PT_DI = 112,
    LX_PT_IP = 128, /* the IRET frame starts here: ip, cs, flags, sp, ss */
    LX_PT_CS = 136,
    LX_PT_SP = 152,
    LX_PT_SIZE = 168,
};
