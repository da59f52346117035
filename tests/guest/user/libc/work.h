/* The calibrated work unit every workload uses: WORK_UNIT_ITERS steps of a 64-bit LCG, a serial
 * dependency chain of a multiply and an add (~5 cycles a step, ~100k cycles a unit: ~40 us on a
 * 2.6 GHz core). Always inlined, so the time of a unit is charged to the function that runs it. */
#pragma once

#include <stdint.h>

#define WORK_UNIT_ITERS 20000

static inline __attribute__((always_inline)) uint64_t work_unit(uint64_t x)
{
    for (int i = 0; i < WORK_UNIT_ITERS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x)); /* no vectorizing or folding the chain */
    }
    return x;
}

/* Keep a value alive, stop the compiler from merging a call into a tail call's jump, and force
 * a frame-pointer frame even in a leaf function: gcc 12 drops `push %rbp; mov %rsp,%rbp` from
 * leaf functions that need no stack frame despite -fno-omit-frame-pointer
 * -mno-omit-leaf-frame-pointer, but a function that takes __builtin_frame_address(0) always
 * sets RBP up. Every ground-truth function uses it (except nofp_middle, which must not). */
#define KEEP(x) __asm__ volatile("" : : "r"(x), "r"(__builtin_frame_address(0)) : "memory")
