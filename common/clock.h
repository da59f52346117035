/* The one clock hvprof's timings and sample timestamps use: CLOCK_MONOTONIC in nanoseconds
 * (a vDSO call, no system call: safe on the vCPU exit path). */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t hv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
