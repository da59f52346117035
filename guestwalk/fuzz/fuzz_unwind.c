/* libFuzzer: a full stack walk (translation, frame-pointer unwinding, leaf repair with capstone)
 * of an arbitrary memory image and register state, user and kernel half. */
#include <stdint.h>
#include <stdlib.h>

#include "guestwalk/fuzz/fuzz_input.h"
#include "guestwalk/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gw_stack *st, uint64_t rip, unsigned cap)
{
    if (st->count > cap || st->stop == GW_STOP_NONE)
        __builtin_trap();
    if (st->count > 0 && st->pc[0] != rip)
        __builtin_trap();
    if ((st->stop == GW_STOP_INVALID_FRAME) != (st->bad != GW_BAD_NONE))
        __builtin_trap();
    if (st->stop == GW_STOP_UNMAPPED && st->fault.reason == PT_OK)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_fuzz_regs r;
    struct gmem mem;
    uint8_t *image;
    if (gw_fuzz_parse(data, size, &r, &mem, &image) != 0)
        return 0;

    static struct gw_walker w; /* capstone opened once per process, as on the vCPU thread */
    static int ready;
    if (!ready) {
        if (gw_walker_init(&w, &mem, NULL, NULL) != 0)
            abort();
        ready = 1;
    }
    w.mem = &mem;
    w.cfg.no_leaf_repair = (r.flags & 1) != 0;
    w.cfg.phys_bits = r.phys_bits;
    struct gw_snapshot cpu = {.rip = r.rip,
                              .rsp = r.rsp,
                              .rbp = r.rbp,
                              .cr0 = r.cr0,
                              .cr3 = r.cr3,
                              .cr4 = r.cr4,
                              .efer = r.efer,
                              .kernel_cr3 = r.kernel_cr3,
                              .cpl = r.cpl};
    gw_walker_begin(&w, &cpu);

    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
    gw_unwind(&w, &st);
    check(&st, r.rip, GW_DEFAULT_MAX_DEPTH);

    /* The other half, from the extra registers, with a small array (capacity cap). */
    struct gw_regs other = {.rip = r.va, .rsp = r.rsp, .rbp = r.va_len, .user = r.cpl != 3};
    st = GW_STACK_INIT(pcs, 1 + (r.flags >> 4));
    gw_unwind_regs(&w, &other, &st);
    check(&st, r.va, 1 + (r.flags >> 4));
    free(image);
    return 0;
}
