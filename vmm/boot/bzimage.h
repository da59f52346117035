/* Linux bzImage, 64-bit boot protocol (Documentation/arch/x86/boot.rst, "64-bit Boot Protocol"
 * and "Details of Header Fields"). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/boot/boot_ctx.h"

struct bzimage_info {
    uint16_t version;
    unsigned setup_sects;  /* effective (0 in the file means 4) */
    size_t header_end;     /* 0x202 + byte[0x201] */
    size_t payload_offset; /* (setup_sects + 1) * 512 */
    size_t payload_size;   /* the rest of the file */
    uint8_t loadflags;
    uint16_t xloadflags;
    uint8_t relocatable;
    uint32_t initrd_addr_max;
    uint32_t kernel_alignment;
    uint32_t cmdline_size;
    uint32_t init_size;
    uint64_t pref_address;
};

/* Validate a bzImage in memory. Errors (no file name; the caller prefixes it): truncated image,
 * boot_flag != 0xAA55, no "HdrS", protocol < 2.12, header too short, XLF_KERNEL_64 clear, setup or
 * payload shorter than setup_sects / syssize claim, kernel_alignment not a power of two. */
int bzimage_parse(const uint8_t *img, size_t len, struct bzimage_info *out, struct hv_err *err);

/* Where the protected-mode payload is copied: pref_address for a relocatable kernel when it is
 * kernel_alignment-aligned and [pref_address, + max(payload, init_size)) fits below `low_ram_end`,
 * otherwise 1 MiB (code32_start's default). */
uint64_t bzimage_load_address(const struct bzimage_info *bz, uint64_t low_ram_end);

/* boot.rst (init_size): relocatable ? align_up(max(load, pref_address), kernel_alignment)
 *                                    : pref_address. */
uint64_t bzimage_runtime_start(const struct bzimage_info *bz, uint64_t load);

/* Load `kernel` (a bzImage) and `initrd` (may be NULL) for ctx: payload, zero page at
 * HVPROF_LOW_BOOTINFO, command line, initrd. Fills out (except regs/sregs). */
int bzimage_load(const struct boot_ctx *ctx, const struct boot_image *kernel,
                 const struct boot_image *initrd, const char *cmdline, struct boot_entry *out,
                 struct hv_err *err);
