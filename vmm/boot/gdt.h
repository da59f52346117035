/* Segment descriptors for the boot GDT and their kvm_segment form. */
#pragma once

#include <stdint.h>

#include <linux/kvm.h>

#include "common/err.h"
#include "guestwalk/gmem.h"
#include "vmm/boot/layout.h"

/* Descriptor flags as one 16-bit value: bits 0-7 are the access byte (P, DPL, S, type) and bits
 * 12-15 the G, D/B, L, AVL nibble (SDM Vol. 3A 3.4.5, Figure 3-8). */
#define GDT_FLAGS_CODE64 0xa09bu /* G, L; P, S, type 0xb (execute/read, accessed) */
#define GDT_FLAGS_DATA   0xc093u /* G, D/B; P, S, type 0x3 (read/write, accessed) */
#define GDT_FLAGS_TSS64  0x008bu /* P, type 0xb (busy 64-bit TSS; SDM 3A 3.5 Table 3-2) */

/* An 8-byte descriptor from flags, a 32-bit base and a 20-bit limit. */
uint64_t gdt_entry(uint16_t flags, uint32_t base, uint32_t limit);

/* The kvm_segment KVM expects for `desc` loaded with `selector`. With G set the limit is given in
 * bytes (limit << 12 | 0xfff): the VMCS/VMCB limit field is not scaled. */
struct kvm_segment gdt_to_kvm_segment(uint64_t desc, uint16_t selector);

/* The boot GDT: null, null, code 0x10, data 0x18, 16-byte TSS descriptor at 0x20 (base 0). */
void gdt_boot_table(uint64_t out[BOOT_GDT_QWORDS]);

/* Write gdt_boot_table() at HVPROF_LOW_GDT. */
int gdt_write(struct gmem *mem, struct hv_err *err);
