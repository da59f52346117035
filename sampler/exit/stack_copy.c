/* User stacks copied at an exit for a walk later (stack_copy.h). The copy and the queue are the
 * exit path's (no allocation, no system call: the slots are the recorder's); the walk of a copy
 * runs on the drain thread, with a walker of its own. */
#include "sampler/exit/stack_copy.h"

#include <string.h>

#include "sampler/exit/core.h"

#define PAGE 4096u
/* Below the copied RSP the stack is the guest's of now, not of the exit: reads there fail too. */
#define COPY_DENY_BELOW (64u << 10)

bool exit_copy_wanted(const struct exit_vcpu *sv, const struct gw_cfi_map *map,
                      const struct gw_stack *st)
{
    return sv->copies.slot && st->count > 0 && (!map || st->cfi_outside);
}

struct exit_stack_copy *exit_copy_take(struct exit_vcpu *sv, uint32_t proc,
                                       const struct gw_cfi_map *map, const struct gw_regs *regs,
                                       const struct gw_stack *exit_walk, uint64_t exit_walk_word)
{
    struct exit_copy_queue *q = &sv->copies;
    uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&q->head, memory_order_acquire);
    if (tail - head >= q->nslots) {
        sv->st.copies_full++;
        return NULL;
    }
    if (!id_proc_take_copy(sv->core->ids, proc, EXIT_COPY_PER_PROC))
        return NULL;
    struct exit_stack_copy *c = &q->slot[tail % q->nslots];
    /* Page by page from RSP, up to the first page the walker cannot read (the stack's top). */
    uint32_t len = 0;
    while (len < EXIT_COPY_BYTES) {
        uint64_t va = regs->rsp + len;
        if (va < regs->rsp)
            break;
        uint32_t chunk = PAGE - (uint32_t)(va & (PAGE - 1));
        if (chunk > EXIT_COPY_BYTES - len)
            chunk = EXIT_COPY_BYTES - len;
        if (gw_read_virt(&sv->walker, va, c->bytes + len, chunk, true, NULL) != 0)
            break;
        len += chunk;
    }
    if (len == 0)
        return NULL;
    c->proc = proc;
    c->vcpu = sv->index;
    c->snap = sv->walker.snap;
    c->regs = *regs;
    c->map = map;
    c->len = len;
    c->nexit = exit_walk->count < EXIT_COPY_FRAMES ? exit_walk->count : EXIT_COPY_FRAMES;
    memcpy(c->exit_pc, exit_walk->pc, c->nexit * sizeof(c->exit_pc[0]));
    c->exit_walk = exit_walk_word;
    c->done = false;
    return c;
}

void exit_copy_commit(struct exit_vcpu *sv)
{
    struct exit_copy_queue *q = &sv->copies;
    uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
    sv->st.copies++;
}

void exit_copy_walk(struct gw_walker *w, const struct guestos *os, const struct exit_stack_copy *c,
                    const struct gw_cfi_map *map, struct gw_stack *st)
{
    uint64_t rsp = c->regs.rsp;
    uint64_t window = w->cfg.stack_window;
    struct gw_tlb_pin pin = {
        .lo = rsp,
        .hi = rsp + c->len,
        .deny_lo = rsp > COPY_DENY_BELOW ? rsp - COPY_DENY_BELOW : 0,
        .deny_hi = rsp + window > rsp ? rsp + window : UINT64_MAX,
        .bytes = c->bytes,
    };
    gw_walker_begin(w, &c->snap);
    w->cfi = map;
    w->tlb.pin = &pin;
    gw_unwinder_run(os->user_unwinder, w, &c->regs, st);
    w->tlb.pin = NULL;
    gw_tlb_flush(&w->tlb); /* what was read through the pin is not the guest's */
}
