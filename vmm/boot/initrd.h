/* Where the initrd goes: as high as allowed (boot.rst "Details of Header Fields",
 * initrd_addr_max; boot.rst `initrd_addr_max`), page aligned, clear of the kernel. */
#pragma once

#include <stdint.h>

#include "common/err.h"

struct initrd_limits {
    uint64_t ram_end;     /* end of the RAM region the initrd may use (low RAM, below the gap) */
    uint64_t max_addr;    /* highest address the initrd may occupy, inclusive (initrd_addr_max) */
    uint64_t avoid_start; /* the kernel's range [avoid_start, avoid_end) (for Linux: the loaded */
    uint64_t avoid_end;   /* image and [runtime_start, runtime_start + init_size)) */
};

/* Pick the highest 4 KiB-aligned gpa >= HVPROF_KERNEL_MIN with [gpa, gpa + size) below
 * min(ram_end, max_addr + 1) and not overlapping the avoid range: just below the top if that is
 * clear of the kernel, else just below the kernel. Fails with "initrd of N bytes does not fit
 * ..." when neither works or size is 0. */
int initrd_place(const struct initrd_limits *lim, uint64_t size, uint64_t *gpa, struct hv_err *err);
