/* ACPI tables describing the VM to the guest (ACPI 6.5, chapter 5.2): RSDP -> XSDT -> FADT (with
 * the FACS and the DSDT) and MADT. A conventional PC, as QEMU's PIIX4 describes it, so every
 * distribution kernel treats it as it treats QEMU:
 *
 *   RSDP  rev 2, XSDT only (RsdtAddress 0, as Firecracker)                        §5.2.5
 *   XSDT  FADT, MADT                                                              §5.2.8
 *   FADT  rev 6: PM1a event/control blocks and a PM timer at I/O ports the VMM
 *         emulates (vmm/acpi_pm.c), SCI on IRQ 9 (never raised: no ACPI events),
 *         SMI_CMD 0 (always in ACPI mode), no fixed power/sleep buttons;
 *         IAPC_BOOT_ARCH: legacy devices, no 8042 keyboard controller, no VGA;
 *         RESET_REG = the i8042's port 0x64 <- 0xFE; CENTURY = CMOS byte 0x32     §5.2.9
 *   FACS  64 bytes: no waking vector, no global lock owner                         §5.2.10
 *   DSDT  one object, \_S5 (package {5, 0}): SLP_TYP 5 in PM1a_CNT powers off     §7.4.2
 *   MADT  one Processor Local APIC per vCPU (APIC ID = vCPU index; Processor
 *         Local x2APIC for IDs >= 255), the IOAPIC at GSI base 0, the SCI's
 *         Interrupt Source Override (IRQ 9 -> GSI 9, level, active high), LINT1 =
 *         NMI on every processor                                                   §5.2.12
 *
 * Why not hardware-reduced ACPI (Firecracker's choice): x86 Linux then drops the legacy PIC
 * (acpi_generic_reduced_hw_init installs null_legacy_pic), so ISA IRQs 0-15 get no identity
 * mapping and devices without a DSDT _CRS lose theirs: the RTC's IRQ 8 (rtc_cmos: "probe failed
 * with error -22") and the UART's IRQ 4.
 *
 * ISA IRQs other than the SCI have no override: KVM's default GSI routing sends ISA IRQ n to
 * IOAPIC pin n, IRQ 0 included (kvm_setup_default_irq_routing), which is what ACPI assumes when
 * no override is given (§5.2.12.5). An override IRQ 0 -> GSI 2, as QEMU's tables have, would be
 * wrong here: QEMU installs its own routing for it. KVM's IOAPIC takes the line level as is
 * (no polarity inversion), so the SCI is declared active high.
 *
 * The tables go into [ACPI_TABLES_GPA, ACPI_TABLES_END), which e820 reports as reserved; Linux
 * finds the RSDP through boot_params.acpi_rsdp_addr and also by scanning 0xE0000-0xFFFFF. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

#define ACPI_TABLES_GPA 0xe0000ull /* RSDP first (16-byte aligned, inside the BIOS scan range) */
#define ACPI_TABLES_END 0xf0000ull

/* Fixed-hardware register blocks (§4.8.1), at QEMU PIIX4's ports: PM1a_EVT (PM1_STS + PM1_EN,
 * 2 bytes each), PM1a_CNT (2 bytes), PM_TMR (4 bytes, 24-bit counter at 3.579545 MHz). */
#define ACPI_PM1A_EVT_PORT 0x600
#define ACPI_PM1A_CNT_PORT 0x604
#define ACPI_PM_TMR_PORT   0x608
#define ACPI_PM_PORTS      12 /* 0x600-0x60b */
#define ACPI_SCI_IRQ       9
#define ACPI_SLEEP_TYP_S5  5u /* the \_S5 value; PM1_CNT.SLP_TYP (bits 12:10) */

/* The most vCPUs the table area can describe (16-byte x2APIC entries). */
#define ACPI_MAX_CPUS 2048u

/* virtio-MMIO devices the DSDT describes (docs/virtio.md): Linux's virtio_mmio driver binds to
 * _HID "LNRO0005" with the window and the interrupt from _CRS. */
#define ACPI_MAX_VIRTIO_MMIO 8u

struct acpi_virtio_mmio {
    uint32_t base, size; /* the register window */
    uint32_t gsi;        /* its interrupt: edge-triggered, active high */
};

struct acpi_config {
    unsigned nr_cpus;
    uint32_t ioapic_addr;
    uint8_t ioapic_id;
    unsigned nvirtio;
    struct acpi_virtio_mmio virtio[ACPI_MAX_VIRTIO_MMIO];
};

/* Build every table into `buf` (as it will sit at guest-physical `base`, RSDP first). Fails if
 * nr_cpus is 0 or above ACPI_MAX_CPUS or the tables do not fit in `cap`. */
int acpi_build(uint8_t *buf, size_t cap, uint64_t base, const struct acpi_config *cfg, size_t *len,
               struct hv_err *err);

/* acpi_build() into guest memory at ACPI_TABLES_GPA. */
int acpi_write(struct gmem *mem, const struct acpi_config *cfg, struct hv_err *err);

/* 8-bit sum (ACPI checksums make the whole table sum to 0). */
uint8_t acpi_sum(const void *p, size_t len);
