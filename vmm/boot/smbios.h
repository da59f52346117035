/* SMBIOS tables (DMTF DSP0134 3.6): a 64-bit "_SM3_" entry point in the BIOS area, where Linux
 * looks for it on a machine without EFI (drivers/firmware/dmi_scan.c scans 0xF0000-0xFFFFF on
 * 16-byte boundaries), and three structures:
 *   type 0  BIOS Information   vendor "hvprof", version, "virtual machine" characteristic (§7.1)
 *   type 1  System Information manufacturer "hvprof", product "hvprof VM" (§7.2)
 *   type 127 End-of-Table (§7.45)
 * Without them Linux prints "DMI not present or invalid" and guest tools that identify the
 * machine from /sys/class/dmi/id (systemd-detect-virt, cloud-init) see nothing. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

#define SMBIOS_GPA 0xf8000ull /* [0xf8000, 0x100000): after the MP table's place at 0xf0000 */
#define SMBIOS_END 0x100000ull

/* Build the entry point at `base` and the structure table right after it into `buf`. */
int smbios_build(uint8_t *buf, size_t cap, uint64_t base, size_t *len, struct hv_err *err);
int smbios_write(struct gmem *mem, struct hv_err *err);
