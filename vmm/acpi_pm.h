/* ACPI fixed-hardware registers of the VM (ACPI 6.5 §4.8.3), at the ports the FADT names
 * (vmm/boot/acpi.h): PM1a_EVT = PM1_STS (0x600, write 1 to clear) + PM1_EN (0x602), PM1a_CNT
 * (0x604) and the PM timer (0x608, a 24-bit count of a 3.579545 MHz clock, §4.8.3.3).
 *   PM1_CNT reads SCI_EN = 1 (always in ACPI mode). Writing SLP_EN (bit 13) with SLP_TYP
 *   (bits 12:10) = 5, the \_S5 value of the DSDT, powers the VM off; other sleep states are
 *   not supported and leave the guest running.
 *   No event ever sets a status bit, so the SCI (IRQ 9) never fires.
 * Accesses of 1, 2 or 4 bytes at any offset are served from the registers' byte image. */
#pragma once

#include <stdint.h>

#include "vmm/boot/acpi.h"

#define ACPI_PM_TIMER_HZ 3579545ull

struct acpi_pm {
    uint16_t pm1_sts, pm1_en, pm1_cnt;
    void (*poweroff)(void *ctx);
    void *ctx;
};

void acpi_pm_init(struct acpi_pm *pm, void (*poweroff)(void *), void *ctx);
/* `now_ns` is CLOCK_MONOTONIC (a parameter, so tests pin it). */
void acpi_pm_read(struct acpi_pm *pm, uint16_t port, uint8_t *data, unsigned size, uint64_t now_ns);
void acpi_pm_write(struct acpi_pm *pm, uint16_t port, const uint8_t *data, unsigned size);
