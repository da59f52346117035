/* Offsets in Linux's struct boot_params ("zero page") and its embedded struct setup_header,
 * from arch/x86/include/uapi/asm/bootparam.h and boot.rst "Details of Header Fields". Accessed
 * by offset (not a C struct) so the loader never depends on host struct layout. */
#pragma once

#define ZP_SIZE 0x1000u

/* boot_params fields outside the setup header */
#define ZP_ACPI_RSDP_ADDR    0x070u /* u64, read by the kernel from protocol 2.14 on */
#define ZP_EXT_RAMDISK_IMAGE 0x0c0u /* u32, high 32 bits of ramdisk_image (2.12+, XLF bit 1) */
#define ZP_EXT_RAMDISK_SIZE  0x0c4u /* u32 */
#define ZP_EXT_CMD_LINE_PTR  0x0c8u /* u32 */
#define ZP_E820_ENTRIES      0x1e8u /* u8 */
#define ZP_SENTINEL          0x1efu /* u8: non-zero means "loader copied more than the header" */
#define ZP_E820_TABLE        0x2d0u /* struct boot_e820_entry[128], 20 bytes each, packed */
#define ZP_E820_MAX          128u
#define ZP_E820_ENTRY_SIZE   20u

/* setup header: [0x1f1, 0x202 + byte at 0x201) ("The end of setup header can be calculated as
 * follows: 0x0202 + byte value at offset 0x0201", boot.rst) */
#define SH_START            0x1f1u
#define SH_SETUP_SECTS      0x1f1u /* u8; 0 means 4 (boot.rst note on setup_sects) */
#define SH_SYSSIZE          0x1f4u /* u32, protected-mode code size in 16-byte paragraphs */
#define SH_VID_MODE         0x1fau /* u16 */
#define SH_BOOT_FLAG        0x1feu /* u16, 0xAA55 */
#define SH_JUMP             0x200u /* u16; byte 0x201 gives the header end */
#define SH_HEADER           0x202u /* u32, "HdrS" */
#define SH_VERSION          0x206u /* u16 */
#define SH_TYPE_OF_LOADER   0x210u /* u8 */
#define SH_LOADFLAGS        0x211u /* u8 */
#define SH_CODE32_START     0x214u /* u32 */
#define SH_RAMDISK_IMAGE    0x218u /* u32 */
#define SH_RAMDISK_SIZE     0x21cu /* u32 */
#define SH_CMD_LINE_PTR     0x228u /* u32 */
#define SH_INITRD_ADDR_MAX  0x22cu /* u32 */
#define SH_KERNEL_ALIGNMENT 0x230u /* u32 */
#define SH_RELOCATABLE      0x234u /* u8 */
#define SH_XLOADFLAGS       0x236u /* u16 */
#define SH_CMDLINE_SIZE     0x238u /* u32 */
#define SH_PREF_ADDRESS     0x258u /* u64 */
#define SH_INIT_SIZE        0x260u /* u32 */
#define SH_MIN_END          0x264u /* the header must reach past init_size (protocol 2.10+) */

#define BZ_BOOT_FLAG           0xaa55u
#define BZ_HDRS_MAGIC          0x53726448u /* "HdrS" */
#define BZ_MIN_VERSION         0x020cu     /* 2.12: xloadflags, the 64-bit entry is advertised */
#define BZ_DEFAULT_SETUP_SECTS 4u
#define BZ_SECTOR              512u
#define BZ_ENTRY64_OFFSET      0x200u /* "the start address of loaded 64-bit kernel plus 0x200" */
#define BZ_LOADER_UNKNOWN      0xffu  /* type_of_loader: "Otherwise, enter 0xFF here" */
#define BZ_VID_MODE_NORMAL     0xffffu
#define BZ_DEFAULT_LOAD                                                                            \
    0x100000ull /* code32_start's default: the protected-mode kernel at 1 MiB                      \
                 */

#define XLF_KERNEL_64              0x1u
#define XLF_CAN_BE_LOADED_ABOVE_4G 0x2u
