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

/* Keep a value alive and stop the compiler from merging a call into a tail call's jump. */
#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")
