/* Numbers derived from the fixed low-memory layout in vmm/boot/hvprof_boot.h (one place, so the
 * GDT, page-table, stack and command-line code agree). docs/boot-elf.md has the table. */
#pragma once

#include "vmm/boot/hvprof_boot.h"

#define BOOT_PAGE_SIZE 0x1000ull

/* Page tables: PML4 at HVPROF_LOW_PML4, PDPT in the next page, then 4 page directories
 * (4 x 512 x 2 MiB = the first 4 GiB identity-mapped). */
#define BOOT_PDPT_GPA           (HVPROF_LOW_PML4 + 0x1000ull)
#define BOOT_PD_GPA             (HVPROF_LOW_PML4 + 0x2000ull)
#define BOOT_PD_PAGES           4u
#define BOOT_IDENTITY_MAP_BYTES (4ull << 30)

/* GDT selectors (boot.rst "64-bit Boot Protocol": __BOOT_CS 0x10, __BOOT_DS 0x18). The 64-bit
 * TSS descriptor is 16 bytes (SDM Vol. 3A 8.2.3), so the table is 6 quadwords, 0x500-0x52f. */
#define BOOT_SEL_CODE   0x10u
#define BOOT_SEL_DATA   0x18u
#define BOOT_SEL_TSS    0x20u
#define BOOT_GDT_QWORDS 6u
#define BOOT_TSS_LIMIT  0x67u /* 104-byte 64-bit TSS (SDM Vol. 3A 8.7) */

#define BOOT_STACK_SIZE 0x4000ull
#define BOOT_STACK_TOP  (HVPROF_LOW_STACK + BOOT_STACK_SIZE)

/* Command line area [0x20000, 0x21000): up to 4095 bytes plus the NUL. */
#define BOOT_CMDLINE_AREA 0x1000u
#define BOOT_CMDLINE_MAX  (BOOT_CMDLINE_AREA - 1u)

/* End of conventional memory; [HVPROF_LOW_MPTABLE, BOOT_LOW_RAM_END) holds the MP table. */
#define BOOT_LOW_RAM_END 0xa0000ull

/* The boot info / zero page occupies one page at HVPROF_LOW_BOOTINFO. */
#define BOOT_PARAMS_SIZE 0x1000u
