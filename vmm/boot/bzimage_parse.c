/* Validation of a bzImage's setup header (boot.rst "Details of Header Fields"). */
#include <inttypes.h>

#include "vmm/boot/bytes.h"
#include "vmm/boot/bzimage.h"
#include "vmm/boot/zeropage.h"

int bzimage_parse(const uint8_t *img, size_t len, struct bzimage_info *out, struct hv_err *err)
{
    if (len < SH_HEADER + 4)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated bzImage: %zu bytes, the setup header needs 0x%x", len,
                       SH_HEADER + 4);
    uint16_t boot_flag = ld16(img + SH_BOOT_FLAG);
    if (boot_flag != BZ_BOOT_FLAG)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "bad bzImage magic: boot_flag at 0x1fe is 0x%04x, not 0xAA55", boot_flag);
    if (ld32(img + SH_HEADER) != BZ_HDRS_MAGIC)
        return hv_errk(err, HV_ERR_CORRUPT, "bad bzImage magic: no \"HdrS\" at 0x202");
    if (len < SH_VERSION + 2)
        return hv_errk(err, HV_ERR_CORRUPT, "truncated bzImage: %zu bytes", len);
    out->version = ld16(img + SH_VERSION);
    if (out->version < BZ_MIN_VERSION)
        return hv_errk(err, HV_ERR_UNSUPPORTED,
                       "boot protocol %u.%02u is older than 2.12: no 64-bit boot protocol",
                       out->version >> 8, out->version & 0xff);

    out->header_end = SH_HEADER + (size_t)img[SH_JUMP + 1];
    if (out->header_end < SH_MIN_END)
        return hv_errk(err, HV_ERR_CORRUPT, "setup header ends at 0x%zx, before init_size (0x%x)",
                       out->header_end, SH_MIN_END);
    out->setup_sects = img[SH_SETUP_SECTS] ? img[SH_SETUP_SECTS] : BZ_DEFAULT_SETUP_SECTS;
    out->payload_offset = ((size_t)out->setup_sects + 1) * BZ_SECTOR;
    if (len < out->payload_offset)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated bzImage: %u setup sectors need %zu bytes, file has %zu",
                       out->setup_sects, out->payload_offset, len);
    /* header_end <= 0x301 < payload_offset (>= 5 sectors), so the whole header is in the file. */

    out->xloadflags = ld16(img + SH_XLOADFLAGS);
    if (!(out->xloadflags & XLF_KERNEL_64))
        return hv_errk(err, HV_ERR_CORRUPT,
                       "no 64-bit entry point (xloadflags 0x%x lacks XLF_KERNEL_64)",
                       out->xloadflags);

    out->payload_size = len - out->payload_offset;
    uint64_t claimed = (uint64_t)ld32(img + SH_SYSSIZE) * 16;
    if (out->payload_size < claimed)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated bzImage: payload is %zu bytes, syssize claims %" PRIu64,
                       out->payload_size, claimed);
    if (out->payload_size == 0)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated bzImage: no protected-mode payload after the setup code");

    out->loadflags = img[SH_LOADFLAGS];
    out->relocatable = img[SH_RELOCATABLE];
    out->initrd_addr_max = ld32(img + SH_INITRD_ADDR_MAX);
    out->kernel_alignment = ld32(img + SH_KERNEL_ALIGNMENT);
    out->cmdline_size = ld32(img + SH_CMDLINE_SIZE);
    out->pref_address = ld64(img + SH_PREF_ADDRESS);
    out->init_size = ld32(img + SH_INIT_SIZE);
    if (out->relocatable &&
        (out->kernel_alignment == 0 || (out->kernel_alignment & (out->kernel_alignment - 1))))
        return hv_errk(err, HV_ERR_CORRUPT, "kernel_alignment 0x%x is not a power of two",
                       out->kernel_alignment);
    return 0;
}
