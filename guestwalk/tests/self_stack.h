/* This process's own stack as a guest's: the registers at a point of a real call chain, the
 * stack above them copied into a synthetic guest address space at the same addresses, and the
 * DWARF CFI of every loaded object (the test, libc, libgcc...) compiled from this process's own
 * memory into a gw_cfi_map, as the sampler compiles a guest's. For the CFI unwinder's tests and
 * benchmark; libgcc's _Unwind_Backtrace of the same stack is the reference. */
#pragma once

#include <stdint.h>

#include "guest_image.h"
#include "guestwalk/cfi_unwind.h"

#define SELF_MAX_FRAMES 128

struct self_stack {
    uint64_t rip, rsp, rbp;        /* at the capture point */
    uint64_t ref[SELF_MAX_FRAMES]; /* _Unwind_Backtrace's IPs, from the capture function */
    unsigned nref;
    uint8_t *copy; /* the stack from rsp up */
    uint64_t copy_len;
};

/* Capture the caller's stack (noinline; call it from the innermost function of a chain). */
void self_stack_capture(struct self_stack *s);
void self_stack_free(struct self_stack *s);

/* Map the captured stack into g (user pages at the same addresses). 0 or -1. */
int self_stack_map(const struct self_stack *s, struct gimg *g);

/* The CFI of every object loaded in this process; NULL on failure. Free with self_map_free. */
struct gw_cfi_map *self_cfi_map(void);
void self_cfi_map_free(struct gw_cfi_map *m);
