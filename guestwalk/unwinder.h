/* Unwinders behind one interface. Each walks one stack (user or kernel half) of the stop given
 * to gw_walker_begin, from explicit registers, reading guest memory only through the walker
 * (gw_read_virt: one bounded, cached reader of guest virtual memory). Frame pointers are the
 * first; ORC (kernel) and DWARF CFI (user) plug in beside it.
 *
 * An unwinder runs on the vCPU exit path: no allocation, no locks, no system calls, bounded by
 * the walker's max_depth and stack window. It fills st exactly as gw_unwind_regs documents
 * (pc[0] the interrupted PC, then return addresses; st->stop the reason it ended). */
#pragma once

#include "guestwalk/unwind.h"
#include "guestwalk/walker.h"

struct gw_unwinder {
    const char *name; /* as a user selects it, e.g. "fp" */
    unsigned (*unwind)(const struct gw_unwinder *u, struct gw_walker *w, const struct gw_regs *r,
                       struct gw_stack *st);
    void *ctx; /* the unwinder's own tables (ORC, CFI), read-only while sampling */
};

/* Frame pointers with leaf repair (guestwalk/unwind.h, guestwalk/leaf.h). */
extern const struct gw_unwinder gw_fp_unwinder;

static inline unsigned gw_unwinder_run(const struct gw_unwinder *u, struct gw_walker *w,
                                       const struct gw_regs *r, struct gw_stack *st)
{
    return u->unwind(u, w, r, st);
}

/* The registers a stop starts its walk from: the snapshot's RIP/RSP/RBP, user half iff CPL 3. */
static inline struct gw_regs gw_regs_of(const struct gw_snapshot *s)
{
    return (struct gw_regs){.rip = s->rip, .rsp = s->rsp, .rbp = s->rbp, .user = s->cpl == 3};
}
