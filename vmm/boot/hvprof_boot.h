/* The boot ABI between hvprof's VMM and an ELF64 kernel (our test guest, or any freestanding
 * 64-bit kernel linked at physical addresses). Shared verbatim by the VMM and the guest, so it
 * uses only fixed-width types. Documented in docs/boot-elf.md.
 *
 * Entry state (every vCPU that the VMM starts; APs are started by the guest with INIT-SIPI):
 *   - 64-bit long mode, CPL 0, paging on with an identity map of the first 4 GiB (2 MiB pages,
 *     PML4 / PDPT / PD in the low reserved area, see docs/boot-elf.md),
 *   - GDT with a flat 64-bit code segment at selector 0x10 and data at 0x18 (as boot.rst's
 *     64-bit protocol), interrupts disabled, RFLAGS = 0x2,
 *   - RIP = ELF e_entry, RSP = top of a 16 KiB boot stack, RDI = guest-physical address of
 *     struct hvprof_bootinfo (also in RSI).
 */
#pragma once

#include <stdint.h>

/* Low-memory layout the VMM uses at boot (guest-physical). The guest may reuse all of it once it
 * has copied what it needs from the boot info and switched to its own page tables; the ranges
 * marked free are never touched by the VMM. (vmm/boot/layout.h uses these same numbers.) */
#define HVPROF_LOW_GDT      0x00500ull /* GDT: null, null, code 0x10, data 0x18, TSS 0x20 */
#define HVPROF_LOW_PML4     0x01000ull /* PML4; PDPT at 0x2000; 4 PDs at 0x3000-0x6fff */
#define HVPROF_LOW_BOOTINFO 0x07000ull /* struct hvprof_bootinfo (ELF) or zero page (bzImage) */
#define HVPROF_LOW_STACK    0x08000ull /* 16 KiB boot stack [0x8000, 0xc000), RSP = 0xc000 */
#define HVPROF_LOW_FREE0    0x0c000ull /* free for the guest: [0xc000, 0x20000) */
#define HVPROF_LOW_CMDLINE  0x20000ull /* command line, up to 4 KiB */
#define HVPROF_LOW_FREE1    0x21000ull /* free for the guest: [0x21000, 0x9fc00) */
#define HVPROF_LOW_MPTABLE  0x9fc00ull /* MP floating pointer + table; e820-reserved to 0xa0000 */
#define HVPROF_LOW_FIRMWARE                                                                        \
    0xe0000ull                              /* ACPI tables; 0xf0000: the MP table for more than 40 \
                                             * vCPUs; 0xf8000: SMBIOS. e820-reserved to 1 MiB */
#define HVPROF_KERNEL_MIN     0x100000ull   /* ELF PT_LOAD segments must start at or above 1 MiB */
#define HVPROF_MMIO_GAP_START 0xc0000000ull /* RAM above 3 GiB continues at 4 GiB */
#define HVPROF_MMIO_GAP_END   0x100000000ull

#define HVPROF_BOOT_MAGIC   0x42505648u /* "HVPB" little-endian */
#define HVPROF_BOOT_VERSION 1u

#define HVPROF_E820_MAX      16
#define HVPROF_E820_RAM      1u
#define HVPROF_E820_RESERVED 2u

/* I/O ports the VMM implements for every guest. */
#define HVPROF_PORT_UART       0x3f8 /* 16550A COM1, IRQ 4 */
#define HVPROF_PORT_DEBUG_EXIT 0x0f4 /* 32-bit out: VM exits with status = value & 0xff */
#define HVPROF_PORT_I8042_CMD  0x064 /* write 0xFE: reset = stop the VM */

struct hvprof_e820 {
    uint64_t addr;
    uint64_t size;
    uint32_t type;
    uint32_t pad;
};

struct hvprof_bootinfo {
    uint32_t magic;       /* HVPROF_BOOT_MAGIC */
    uint32_t version;     /* HVPROF_BOOT_VERSION */
    uint32_t size;        /* sizeof(struct hvprof_bootinfo) as the VMM knows it */
    uint32_t nr_cpus;     /* vCPUs created; the MP table lists the same */
    uint64_t mem_bytes;   /* guest RAM size (--mem) */
    uint64_t cmdline_gpa; /* NUL-terminated command line, 0 if none */
    uint32_t cmdline_len; /* bytes, without the NUL */
    uint32_t e820_entries;
    uint64_t initrd_gpa; /* boot archive (--initrd), 0 if none */
    uint64_t initrd_size;
    uint64_t kernel_end_gpa; /* first byte after the highest loaded PT_LOAD segment */
    uint64_t mptable_gpa;    /* MP floating pointer structure ("_MP_"), 0 if none */
    struct hvprof_e820 e820[HVPROF_E820_MAX];
};
