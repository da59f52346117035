#include "vmm/boot/e820.h"

#include <string.h>

#include "vmm/boot/boot.h"
#include "vmm/boot/layout.h"

static void add(struct hvprof_e820 *out, unsigned *n, uint64_t addr, uint64_t size, uint32_t type)
{
    out[*n] = (struct hvprof_e820){.addr = addr, .size = size, .type = type};
    (*n)++;
}

int e820_build(uint64_t mem_bytes, struct hvprof_e820 out[HVPROF_E820_MAX], unsigned *n,
               struct hv_err *err)
{
    struct ram_region ram[2];
    unsigned nram;
    if (layout_ram_regions(mem_bytes, ram, &nram, err))
        return -1;

    memset(out, 0, sizeof(struct hvprof_e820) * HVPROF_E820_MAX);
    *n = 0;
    add(out, n, 0, HVPROF_LOW_MPTABLE, HVPROF_E820_RAM);
    add(out, n, HVPROF_LOW_MPTABLE, BOOT_LOW_RAM_END - HVPROF_LOW_MPTABLE, HVPROF_E820_RESERVED);
    add(out, n, HVPROF_LOW_FIRMWARE, HVPROF_KERNEL_MIN - HVPROF_LOW_FIRMWARE, HVPROF_E820_RESERVED);
    /* ram[0] starts at 0 and is at least BOOT_MIN_MEM_BYTES (16 MiB) long. */
    add(out, n, HVPROF_KERNEL_MIN, ram[0].size - HVPROF_KERNEL_MIN, HVPROF_E820_RAM);
    if (nram == 2)
        add(out, n, ram[1].gpa, ram[1].size, HVPROF_E820_RAM);
    return 0;
}
