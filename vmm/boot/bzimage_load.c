/* Loading a bzImage for the 64-bit boot protocol (boot.rst "64-bit Boot Protocol"): payload at the
 * load address, a clean zero page holding only the image's setup header plus the fields a boot
 * loader writes, the command line and the initrd. boot.rst; docs/sources.md §2. */
#include <inttypes.h>
#include <string.h>

#include "vmm/boot/acpi.h"
#include "vmm/boot/bytes.h"
#include "vmm/boot/bzimage.h"
#include "vmm/boot/cmdline.h"
#include "vmm/boot/guest_write.h"
#include "vmm/boot/initrd.h"
#include "vmm/boot/layout.h"
#include "vmm/boot/zeropage.h"

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

uint64_t bzimage_runtime_start(const struct bzimage_info *bz, uint64_t load)
{
    if (!bz->relocatable)
        return bz->pref_address;
    uint64_t a = max_u64(load, bz->pref_address);
    uint64_t align = bz->kernel_alignment; /* a power of two (bzimage_parse) */
    if (a > UINT64_MAX - align)
        return UINT64_MAX & ~(align - 1); /* absurd pref_address: lands outside RAM, rejected */
    return (a + align - 1) & ~(align - 1);
}

uint64_t bzimage_load_address(const struct bzimage_info *bz, uint64_t low_ram_end)
{
    /* boot.rst (pref_address): "A relocating bootloader should attempt to load at this address
     * if possible." Loading there lets the kernel decompress in place instead of first moving
     * itself; a non-relocatable kernel moves itself to pref_address anyway. */
    uint64_t span = max_u64(bz->payload_size, bz->init_size);
    uint64_t p = bz->pref_address;
    if (bz->relocatable && p >= HVPROF_KERNEL_MIN && p % bz->kernel_alignment == 0 &&
        p < low_ram_end && span <= low_ram_end - p)
        return p;
    return BZ_DEFAULT_LOAD;
}

static void e820_to_zeropage(uint8_t *zp, const struct boot_ctx *ctx)
{
    /* struct boot_e820_entry { __u64 addr; __u64 size; __u32 type; } __packed (bootparam.h) */
    st8(zp + ZP_E820_ENTRIES, (uint8_t)ctx->ne820);
    for (unsigned i = 0; i < ctx->ne820 && i < ZP_E820_MAX; i++) {
        uint8_t *e = zp + ZP_E820_TABLE + i * ZP_E820_ENTRY_SIZE;
        st64(e, ctx->e820[i].addr);
        st64(e + 8, ctx->e820[i].size);
        st32(e + 16, ctx->e820[i].type);
    }
}

int bzimage_load(const struct boot_ctx *ctx, const struct boot_image *kernel,
                 const struct boot_image *initrd, const char *cmdline, struct boot_entry *out,
                 struct hv_err *err)
{
    struct bzimage_info bz;
    if (bzimage_parse(kernel->data, kernel->size, &bz, err))
        return hv_err_prefix(err, "%s", kernel->name);

    /* The kernel's footprint: the loaded image plus the init_size window it decompresses into
     * before it has read the memory map (boot.rst init_size). All of it must be RAM, and the
     * initrd must stay out of it (boot.rst; docs/sources.md §2). */
    uint64_t load = bzimage_load_address(&bz, ctx->low_ram_end);
    uint64_t runtime = bzimage_runtime_start(&bz, load);
    if (runtime < HVPROF_KERNEL_MIN)
        return hv_errf(err,
                       "%s: kernel runtime address 0x%" PRIx64
                       " (pref_address) is below 1 MiB, outside the kernel's RAM",
                       kernel->name, runtime);
    /* pref_address is at most 2^64 - 1 and init_size / payload below 2^32 / 1 GiB: a runtime
     * start past RAM is reported as is, everything else is summed without overflow. */
    uint64_t start = load < runtime ? load : runtime;
    uint64_t end = runtime >= ctx->low_ram_end
                       ? runtime
                       : max_u64(load + bz.payload_size, runtime + (uint64_t)bz.init_size);
    if (runtime >= ctx->low_ram_end || end > ctx->low_ram_end)
        return hv_errf(err,
                       "%s: kernel too big for --mem: needs [0x%" PRIx64 ", 0x%" PRIx64
                       ") but RAM below the MMIO gap ends at 0x%" PRIx64,
                       kernel->name, start, end, ctx->low_ram_end);

    uint32_t cmd_len;
    if (cmdline_write(ctx->mem, cmdline, bz.cmdline_size, &cmd_len, err) ||
        guest_write(ctx->mem, load, kernel->data + bz.payload_offset, bz.payload_size,
                    "kernel payload", err))
        return hv_err_prefix(err, "%s", kernel->name);

    /* "A bootloader is supposed to only take setup_header and put it into a clean boot_params
     * buffer" (bootparam.h): copy exactly [0x1f1, 0x202 + byte[0x201]) (bootparam.h;
     * docs/sources.md §2). */
    uint8_t zp[ZP_SIZE];
    memset(zp, 0, sizeof(zp));
    memcpy(zp + SH_START, kernel->data + SH_START, bz.header_end - SH_START);
    st16(zp + SH_VID_MODE, BZ_VID_MODE_NORMAL);
    st8(zp + SH_TYPE_OF_LOADER, BZ_LOADER_UNKNOWN);
    st32(zp + SH_CMD_LINE_PTR, (uint32_t)HVPROF_LOW_CMDLINE);
    /* Older kernels ignore the field and find the RSDP by scanning 0xe0000-0xfffff. */
    st64(zp + ZP_ACPI_RSDP_ADDR, ACPI_TABLES_GPA);
    e820_to_zeropage(zp, ctx);

    out->initrd_gpa = 0;
    out->initrd_size = 0;
    if (initrd) {
        /* Always below the MMIO gap, so ramdisk_image's 32 bits suffice and ext_ramdisk_* stay
         * 0 (they are only needed above 4 GiB, with XLF_CAN_BE_LOADED_ABOVE_4G). */
        struct initrd_limits lim = {.ram_end = ctx->low_ram_end,
                                    .max_addr = bz.initrd_addr_max,
                                    .avoid_start = start,
                                    .avoid_end = end};
        uint64_t at;
        if (initrd_place(&lim, initrd->size, &at, err))
            return hv_err_prefix(err, "%s", initrd->name);
        if (guest_write(ctx->mem, at, initrd->data, initrd->size, "initrd", err))
            return hv_err_prefix(err, "%s", initrd->name);
        st32(zp + SH_RAMDISK_IMAGE, (uint32_t)at);
        st32(zp + SH_RAMDISK_SIZE, (uint32_t)initrd->size);
        out->initrd_gpa = at;
        out->initrd_size = initrd->size;
    }
    if (guest_write(ctx->mem, HVPROF_LOW_BOOTINFO, zp, sizeof(zp), "zero page", err))
        return -1;

    out->kind = BOOT_BZIMAGE;
    out->kernel_gpa = load;
    out->kernel_end = end;
    out->image.bz_start = load;
    out->image.bz_end = end;
    out->params_gpa = HVPROF_LOW_BOOTINFO;
    out->entry = load + BZ_ENTRY64_OFFSET;
    return 0;
}
