/* User stacks with DWARF call-frame information where a binary has it, frame pointers elsewhere
 * (docs/cfi.md). The tables are compiled off the exit path (guestwalk/cfi.h) and published to
 * the exit path as an immutable map of one address space's modules: the sampler points the
 * walker at the map of the process it samples (gw_walker.cfi) before the user walk.
 *
 * Per frame: find the module covering the PC (binary search of the map), its row (binary search
 * of the table), and apply it:
 *   CFA      = RSP + n | RBP + n | an expression (the PLT's, a signal frame's)
 *   caller's RIP = [CFA + n] (or undefined: the outermost frame, e.g. _start and clone3)
 *   caller's RBP = [CFA + n] | unchanged | an expression
 *   caller's RSP = CFA
 * A PC outside every table, or in a gap of one, is walked with frame pointers (at frame 0 with
 * the leaf repair of guestwalk/leaf.h and the frameless scan); a rule the walk cannot evaluate
 * (a CFA in another register, an unsupported expression) ends the walk with
 * GW_STOP_UNWIND_RULE. Frames above the first must rise on the stack (CFA > RSP), except through
 * a signal frame (which may come from an alternate signal stack; at most CFI_MAX_SWITCHES);
 * return addresses are canonical user addresses; at most max_depth frames. */
#pragma once

#include "guestwalk/cfi.h"
#include "guestwalk/unwinder.h"

#define CFI_MAX_SWITCHES 4

/* One module of an address space with its table: code in [lo, hi), link + bias = run time. t is
 * NULL for a module known to have none (frame pointers there): its code is known, not waiting
 * for a table (sampler/exit/stack_copy.h copies only stacks through code no table covers yet). */
struct gw_cfi_module {
    uint64_t lo, hi;
    uint64_t bias;
    const struct cfi_table *t;
};

/* An address space's modules with tables (or known to have none), sorted by lo, not
 * overlapping. Immutable. */
struct gw_cfi_map {
    size_t n;
    struct gw_cfi_module m[];
};

/* The module covering run-time address pc, or NULL. */
const struct gw_cfi_module *gw_cfi_map_find(const struct gw_cfi_map *map, uint64_t pc);

/* Walks w->cfi's tables (frame pointers alone when it is NULL). */
extern const struct gw_unwinder gw_cfi_unwinder;

/* The walk itself, with an explicit map. */
unsigned gw_cfi_unwind(const struct gw_cfi_map *map, struct gw_walker *w, const struct gw_regs *r,
                       struct gw_stack *st);
