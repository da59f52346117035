/* Intel MultiProcessor Specification 1.4 tables (chapter 4) describing the vCPUs, the ISA bus,
 * the in-kernel IOAPIC and the legacy interrupt wiring. Linux finds the floating pointer by
 * scanning the last KiB of conventional memory (0x9fc00), see docs/sources.md §2. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

#define MP_LAPIC_BASE     0xfee00000u
#define MP_IOAPIC_BASE    0xfec00000u
#define MP_APIC_VERSION   0x14u /* integrated xAPIC, as KVM's LAPIC reports */
#define MP_IOAPIC_VERSION 0x11u /* KVM's IOAPIC (IOAPIC_VERSION_ID) */
#define MP_ISA_BUS_ID     0u
#define MP_ISA_IRQS       16u

/* MP spec 1.4 Table 4-1 .. 4-10 (entry type codes and sizes). */
enum {
    MP_ENT_PROCESSOR = 0,
    MP_ENT_BUS = 1,
    MP_ENT_IOAPIC = 2,
    MP_ENT_INTSRC = 3,
    MP_ENT_LINTSRC = 4
};
enum { MP_INT = 0, MP_NMI = 1, MP_SMI = 2, MP_EXTINT = 3 };

struct mp_floating {
    char signature[4]; /* "_MP_" */
    uint32_t physptr;  /* configuration table */
    uint8_t length;    /* in 16-byte units: 1 */
    uint8_t spec_rev;  /* 4 = version 1.4 */
    uint8_t checksum;  /* all 16 bytes sum to 0 */
    uint8_t feature[5];
} __attribute__((packed));

struct mp_config {
    char signature[4]; /* "PCMP" */
    uint16_t length;   /* base table incl. entries */
    uint8_t spec_rev;
    uint8_t checksum; /* base table sums to 0 */
    char oem[8];
    char product[12];
    uint32_t oem_ptr;
    uint16_t oem_size;
    uint16_t entry_count;
    uint32_t lapic;
    uint16_t ext_length;
    uint8_t ext_checksum;
    uint8_t reserved;
} __attribute__((packed));

struct mp_processor {
    uint8_t type;
    uint8_t apic_id;
    uint8_t apic_version;
    uint8_t flags; /* bit 0 enabled, bit 1 bootstrap processor */
    uint32_t signature;
    uint32_t features;
    uint32_t reserved[2];
} __attribute__((packed));

struct mp_bus {
    uint8_t type;
    uint8_t bus_id;
    char bus_type[6]; /* "ISA   " */
} __attribute__((packed));

struct mp_ioapic {
    uint8_t type;
    uint8_t apic_id;
    uint8_t version;
    uint8_t flags; /* bit 0 enabled */
    uint32_t addr;
} __attribute__((packed));

struct mp_intsrc { /* also the layout of local interrupt (LINTSRC) entries */
    uint8_t type;
    uint8_t irq_type;
    uint16_t flags; /* polarity/trigger; 0 = conforms to the bus (ISA: edge, active high) */
    uint8_t src_bus;
    uint8_t src_irq;
    uint8_t dst_apic; /* IOAPIC id, or 0xff = every local APIC for LINTSRC */
    uint8_t dst_pin;  /* IOAPIC INTIN#, or LINT0/1 */
} __attribute__((packed));

/* Bytes mptable_build() writes for nr_cpus: 16 + 44 + 20 n + 8 + 8 + 16 * 8 + 2 * 8. */
size_t mptable_size(unsigned nr_cpus);

/* Build the floating pointer (at `gpa`) followed by the configuration table (at gpa + 16) into
 * `buf`: one processor per vCPU (APIC id = index, BSP flag on 0), the ISA bus, the IOAPIC
 * (id nr_cpus, 0xfec00000), ISA IRQ 0-15 -> IOAPIC pin 0-15 (KVM's default GSI routing,
 * kvm_setup_default_irq_routing(), maps GSI n to IOAPIC pin n, IRQ 0 included), ExtINT -> LINT0
 * and NMI -> LINT1 on every LAPIC. Fails if it does not fit in `cap` or nr_cpus is 0 / > 254. */
int mptable_build(uint8_t *buf, size_t cap, uint32_t gpa, unsigned nr_cpus, size_t *len,
                  struct hv_err *err);

/* Where the MP table goes: the last KiB below 640 KiB while it fits there (up to 40 vCPUs), else
 * the BIOS area at 0xf0000 (64 KiB, also scanned by Linux: MP spec 4, "in the BIOS ROM address
 * space between 0F0000h and 0FFFFFh"). More than 254 vCPUs have no MP table (8-bit APIC ids):
 * the ACPI MADT describes them. */
#define MPTABLE_HIGH_GPA 0xf0000ull
#define MPTABLE_MAX_CPUS 254u
/* Guest-physical address mptable_write() uses for nr_cpus, 0 for none. */
uint64_t mptable_gpa(unsigned nr_cpus);

/* mptable_build() into guest memory at mptable_gpa(nr_cpus); nothing for more than 254 vCPUs. */
int mptable_write(struct gmem *mem, unsigned nr_cpus, struct hv_err *err);

/* 8-bit sum of `len` bytes (the MP spec checksums make it 0). */
uint8_t mp_sum(const void *p, size_t len);
