#include "vmm/boot/initrd.h"

#include <inttypes.h>

#include "vmm/boot/layout.h"

static uint64_t align_down(uint64_t v, uint64_t a)
{
    return v & ~(a - 1);
}

/* Highest aligned start for `size` bytes ending at or below `top`, or 0 if below the floor. */
static uint64_t highest_below(uint64_t top, uint64_t size)
{
    if (top < HVPROF_KERNEL_MIN || top - HVPROF_KERNEL_MIN < size)
        return 0;
    return align_down(top - size, BOOT_PAGE_SIZE);
}

int initrd_place(const struct initrd_limits *lim, uint64_t size, uint64_t *gpa, struct hv_err *err)
{
    if (size == 0)
        return hv_errf(err, "initrd is empty");
    uint64_t top = lim->ram_end;
    if (lim->max_addr < UINT64_MAX && lim->max_addr + 1 < top)
        top = lim->max_addr + 1;

    uint64_t at = highest_below(top, size);
    if (at && at < lim->avoid_end && at + size > lim->avoid_start) {
        /* Overlaps the kernel: the only other room is below it. */
        at = highest_below(lim->avoid_start < top ? lim->avoid_start : top, size);
    }
    if (!at)
        return hv_errf(err,
                       "initrd of %" PRIu64 " bytes does not fit in RAM below 0x%" PRIx64
                       " clear of the kernel at [0x%" PRIx64 ", 0x%" PRIx64 ")",
                       size, top, lim->avoid_start, lim->avoid_end);
    *gpa = at;
    return 0;
}
