/* Loading an ELF64 kernel for the hvprof boot ABI (vmm/boot/hvprof_boot.h, docs/boot-elf.md). */
#include <inttypes.h>
#include <string.h>

#include "vmm/boot/cmdline.h"
#include "vmm/boot/elf64.h"
#include "vmm/boot/guest_write.h"
#include "vmm/boot/initrd.h"
#include "vmm/boot/layout.h"
#include "vmm/boot/mptable.h"

_Static_assert(sizeof(struct hvprof_bootinfo) <= BOOT_PARAMS_SIZE, "boot info fits its page");

static int load_segments(const struct boot_ctx *ctx, const struct boot_image *kernel,
                         const struct elf64_info *elf, struct hv_err *err)
{
    /* Check every segment before copying any. */
    for (unsigned i = 0; i < elf->nseg; i++) {
        const struct elf64_segment *s = &elf->seg[i];
        if (!boot_in_ram(ctx, s->paddr, s->memsz))
            return hv_errf(err,
                           "%s: segment [0x%" PRIx64 ", 0x%" PRIx64
                           ") is outside guest RAM (--mem %" PRIu64 " MiB)",
                           kernel->name, s->paddr, s->paddr + s->memsz, ctx->cfg->mem_bytes >> 20);
    }
    for (unsigned i = 0; i < elf->nseg; i++) {
        const struct elf64_segment *s = &elf->seg[i];
        if (guest_write(ctx->mem, s->paddr, kernel->data + s->offset, s->filesz, "segment", err) ||
            guest_zero(ctx->mem, s->paddr + s->filesz, s->memsz - s->filesz, "bss", err))
            return hv_err_prefix(err, "%s", kernel->name);
    }
    return 0;
}

int elf64_load(const struct boot_ctx *ctx, const struct boot_image *kernel,
               const struct boot_image *initrd, const char *cmdline, struct boot_entry *out,
               struct hv_err *err)
{
    struct elf64_info elf;
    if (elf64_parse(kernel->data, kernel->size, &elf, err))
        return hv_err_prefix(err, "%s", kernel->name);
    if (elf.entry >= BOOT_IDENTITY_MAP_BYTES)
        return hv_errf(err, "%s: entry point 0x%" PRIx64 " is above the 4 GiB identity map",
                       kernel->name, elf.entry);

    struct hvprof_bootinfo bi;
    memset(&bi, 0, sizeof(bi));
    bi.magic = HVPROF_BOOT_MAGIC;
    bi.version = HVPROF_BOOT_VERSION;
    bi.size = sizeof(bi);
    bi.nr_cpus = ctx->cfg->nr_cpus;
    bi.mem_bytes = ctx->cfg->mem_bytes;
    bi.kernel_end_gpa = elf.end;
    bi.mptable_gpa = mptable_gpa(ctx->cfg->nr_cpus);
    bi.e820_entries = ctx->ne820;
    memcpy(bi.e820, ctx->e820, sizeof(bi.e820));

    if (cmdline) {
        if (cmdline_write(ctx->mem, cmdline, BOOT_CMDLINE_MAX, &bi.cmdline_len, err))
            return hv_err_prefix(err, "%s", kernel->name);
        bi.cmdline_gpa = HVPROF_LOW_CMDLINE;
    }
    if (load_segments(ctx, kernel, &elf, err))
        return -1;

    if (initrd) {
        struct initrd_limits lim = {.ram_end = ctx->low_ram_end,
                                    .max_addr = UINT64_MAX,
                                    .avoid_start = elf.lowest,
                                    .avoid_end = elf.end};
        if (initrd_place(&lim, initrd->size, &bi.initrd_gpa, err) ||
            guest_write(ctx->mem, bi.initrd_gpa, initrd->data, initrd->size, "initrd", err))
            return hv_err_prefix(err, "%s", initrd->name);
        bi.initrd_size = initrd->size;
    }
    if (guest_zero(ctx->mem, HVPROF_LOW_BOOTINFO, BOOT_PARAMS_SIZE, "boot info", err) ||
        guest_write(ctx->mem, HVPROF_LOW_BOOTINFO, &bi, sizeof(bi), "boot info", err))
        return -1;

    out->kind = BOOT_ELF64;
    out->entry = elf.entry;
    out->kernel_gpa = elf.lowest;
    out->kernel_end = elf.end;
    out->initrd_gpa = bi.initrd_gpa;
    out->initrd_size = bi.initrd_size;
    out->params_gpa = HVPROF_LOW_BOOTINFO;
    _Static_assert(ELF64_MAX_SEGMENTS == 16 && ELF_BUILD_ID_MAX == 64, "boot_kernel_image size");
    out->image.nseg = elf.nseg;
    for (unsigned i = 0; i < elf.nseg; i++) {
        out->image.seg[i].vaddr = elf.seg[i].vaddr;
        out->image.seg[i].memsz = elf.seg[i].memsz;
        out->image.seg[i].offset = elf.seg[i].offset;
        out->image.seg[i].flags = elf.seg[i].flags;
    }
    memcpy(out->image.build_id, elf.build_id, elf.build_id_len);
    out->image.build_id_len = elf.build_id_len;
    return 0;
}
