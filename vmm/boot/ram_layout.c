/* Guest RAM regions for --mem: everything below the 32-bit MMIO gap, the rest from 4 GiB. The
 * gap [3 GiB, 4 GiB) holds the IOAPIC (0xfec00000) and LAPIC (0xfee00000) pages. */
#include <inttypes.h>

#include "vmm/boot/boot.h"
#include "vmm/boot/layout.h"

int layout_ram_regions(uint64_t mem_bytes, struct ram_region out[2], unsigned *n,
                       struct hv_err *err)
{
    if (mem_bytes < BOOT_MIN_MEM_BYTES)
        return hv_errf(err, "--mem %" PRIu64 " MiB is too small: at least %llu MiB needed",
                       mem_bytes >> 20, BOOT_MIN_MEM_BYTES >> 20);
    if (mem_bytes > BOOT_MAX_MEM_BYTES)
        return hv_errf(err, "--mem %" PRIu64 " GiB is too large: at most %llu GiB", mem_bytes >> 30,
                       BOOT_MAX_MEM_BYTES >> 30);
    if (mem_bytes % BOOT_PAGE_SIZE)
        return hv_errf(err, "--mem %" PRIu64 " bytes is not a multiple of 4 KiB", mem_bytes);

    uint64_t low = mem_bytes < HVPROF_MMIO_GAP_START ? mem_bytes : HVPROF_MMIO_GAP_START;
    out[0] = (struct ram_region){.gpa = 0, .size = low};
    *n = 1;
    if (mem_bytes > low) {
        out[1] = (struct ram_region){.gpa = HVPROF_MMIO_GAP_END, .size = mem_bytes - low};
        *n = 2;
    }
    return 0;
}
