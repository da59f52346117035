/* The BSP's register state at the kernel entry (boot.rst "64-bit Boot Protocol"). */
#pragma once

#include <stdint.h>

#include "vmm/boot/boot.h"

#define BOOT_CR0  0x80010033ull /* PG | WP | NE | ET | MP | PE (SDM Vol. 3A 2.5) */
#define BOOT_CR4  0x20ull       /* PAE: required for long mode */
#define BOOT_EFER 0x500ull      /* LMA | LME */

/* Fill out->regs / out->sregs: long mode, flat CS 0x10 / DS 0x18, TR 0x20, GDT at
 * HVPROF_LOW_GDT, empty IDT (any exception before the kernel loads its own is a triple fault,
 * which the VMM sees as KVM_EXIT_SHUTDOWN), CR3 = HVPROF_LOW_PML4, RFLAGS = 0x2 (IF clear),
 * RSP = top of the boot stack, RIP = rip, RSI = params. Also sets out->entry. */
void boot_cpu_state(struct boot_entry *out, uint64_t rip, uint64_t params);
