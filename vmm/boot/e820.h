/* The guest's physical memory map, shared by the ELF boot info and the Linux zero page. */
#pragma once

#include <stdint.h>

#include "common/err.h"
#include "vmm/boot/hvprof_boot.h"

/* Fill `out` for --mem `mem_bytes` (sorted, non-overlapping):
 *   [0, 0x9fc00)            RAM       conventional memory (Linux keeps its AP trampoline here)
 *   [0x9fc00, 0xa0000)      reserved  MP table (MP spec §4, as Firecracker)
 *   [0xe0000, 0x100000)     reserved  ACPI tables (vmm/boot/acpi.h), MP table beyond 40 vCPUs
 *   [0x100000, low end)     RAM       low end = min(mem, 3 GiB)
 *   [4 GiB, 4 GiB + rest)   RAM       only when mem > 3 GiB
 * [0xa0000, 0xe0000) (VGA hole) and the MMIO gap are absent, i.e. not RAM. */
int e820_build(uint64_t mem_bytes, struct hvprof_e820 out[HVPROF_E820_MAX], unsigned *n,
               struct hv_err *err);
