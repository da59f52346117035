/* boot_load(): read the files, detect the kernel format by magic, write the shared boot-time
 * structures (GDT, page tables, MP table) and dispatch to the ELF64 or bzImage loader. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/boot/acpi.h"
#include "vmm/boot/boot.h"
#include "vmm/boot/boot_ctx.h"
#include "vmm/boot/bzimage.h"
#include "vmm/boot/cpu_state.h"
#include "vmm/boot/e820.h"
#include "vmm/boot/elf64.h"
#include "vmm/boot/gdt.h"
#include "vmm/boot/layout.h"
#include "vmm/boot/mptable.h"
#include "vmm/boot/pagetable.h"
#include "common/files.h"
#include "vmm/boot/smbios.h"
#include "vmm/boot/zeropage.h"

int boot_in_ram(const struct boot_ctx *ctx, uint64_t gpa, uint64_t len)
{
    for (unsigned i = 0; i < ctx->nram; i++) {
        const struct ram_region *r = &ctx->ram[i];
        if (gpa >= r->gpa && gpa - r->gpa <= r->size && len <= r->size - (gpa - r->gpa))
            return gmem_ptr(ctx->mem, gpa, len) != NULL;
    }
    return 0;
}

static int is_elf(const struct boot_image *k)
{
    return k->size >= 4 && memcmp(k->data, "\177ELF", 4) == 0;
}

/* Either bzImage signature is enough to commit to the bzImage parser, which then names what is
 * wrong with the other one. */
static int is_bzimage(const struct boot_image *k)
{
    if (k->size >= SH_BOOT_FLAG + 2 &&
        (k->data[SH_BOOT_FLAG] | k->data[SH_BOOT_FLAG + 1] << 8) == BZ_BOOT_FLAG)
        return 1;
    return k->size >= SH_HEADER + 4 && memcmp(k->data + SH_HEADER, "HdrS", 4) == 0;
}

static int ctx_init(struct boot_ctx *ctx, struct gmem *mem, const struct boot_config *cfg,
                    struct hv_err *err)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->mem = mem;
    ctx->cfg = cfg;
    if (cfg->nr_cpus == 0 || cfg->nr_cpus > BOOT_MAX_CPUS)
        return hv_errf(err, "--vcpus %u: 1 to %u supported", cfg->nr_cpus, BOOT_MAX_CPUS);
    if (layout_ram_regions(cfg->mem_bytes, ctx->ram, &ctx->nram, err) ||
        e820_build(cfg->mem_bytes, ctx->e820, &ctx->ne820, err))
        return -1;
    ctx->low_ram_end = ctx->ram[0].gpa + ctx->ram[0].size;
    for (unsigned i = 0; i < ctx->nram; i++)
        if (!gmem_ptr(mem, ctx->ram[i].gpa, ctx->ram[i].size))
            return hv_errf(err,
                           "guest memory does not cover RAM region [0x%" PRIx64 ", 0x%" PRIx64
                           ") for --mem %" PRIu64 " MiB",
                           ctx->ram[i].gpa, ctx->ram[i].gpa + ctx->ram[i].size,
                           cfg->mem_bytes >> 20);
    return 0;
}

int boot_load_images(struct gmem *mem, const struct boot_config *cfg,
                     const struct boot_image *kernel, const struct boot_image *initrd,
                     struct boot_entry *out, struct hv_err *err)
{
    struct boot_ctx ctx;
    memset(out, 0, sizeof(*out));
    if (ctx_init(&ctx, mem, cfg, err))
        return -1;

    int elf = is_elf(kernel);
    if (!elf && !is_bzimage(kernel))
        return hv_errk(err, HV_ERR_UNSUPPORTED, "%s: not an ELF64 kernel or a Linux bzImage",
                       kernel->name);

    /* IOAPIC id: after the CPUs' APIC ids while they fit in 8 bits (as the MP table has it). */
    struct acpi_config acpi = {.nr_cpus = cfg->nr_cpus,
                               .ioapic_addr = MP_IOAPIC_BASE,
                               .ioapic_id = cfg->nr_cpus < 255 ? (uint8_t)cfg->nr_cpus : 0,
                               .nvirtio = cfg->nvirtio};
    for (unsigned i = 0; i < cfg->nvirtio && i < ACPI_MAX_VIRTIO_MMIO; i++)
        acpi.virtio[i] =
            (struct acpi_virtio_mmio){cfg->virtio[i].base, cfg->virtio[i].size, cfg->virtio[i].gsi};
    if (gdt_write(mem, err) || pt_identity_write(mem, err) ||
        mptable_write(mem, cfg->nr_cpus, err) || acpi_write(mem, &acpi, err) ||
        smbios_write(mem, err))
        return -1;

    if (elf) {
        if (elf64_load(&ctx, kernel, initrd, cfg->cmdline, out, err))
            return -1;
    } else {
        const char *cmdline = cfg->cmdline ? cfg->cmdline : BOOT_LINUX_DEFAULT_CMDLINE;
        if (bzimage_load(&ctx, kernel, initrd, cmdline, out, err))
            return -1;
    }
    struct boot_entry loaded = *out;
    boot_cpu_state(out, loaded.entry, loaded.params_gpa);
    if (elf)
        out->regs.rdi = loaded.params_gpa; /* hvprof_boot.h: RDI = RSI = &bootinfo */
    return 0;
}

int boot_load(struct gmem *mem, const struct boot_config *cfg, struct boot_entry *out,
              struct hv_err *err)
{
    /* Nothing larger than guest RAM can be loaded; bound the reads by it. */
    size_t max =
        cfg->mem_bytes < BOOT_MAX_MEM_BYTES ? (size_t)cfg->mem_bytes : (size_t)BOOT_MAX_MEM_BYTES;
    uint8_t *kdata = NULL, *idata = NULL;
    size_t ksize = 0, isize = 0;
    int rc = -1;

    if (!cfg->kernel_path)
        return hv_errf(err, "no kernel given");
    /* An ELF kernel file may carry debug info beyond its loaded size, so it is not bounded by
     * --mem; 1 GiB is far beyond any kernel. */
    const size_t kmax = (size_t)1 << 30;
    if (hv_read_file(cfg->kernel_path, kmax, &kdata, &ksize, err))
        goto out;
    if (cfg->initrd_path && hv_read_file(cfg->initrd_path, max, &idata, &isize, err))
        goto out;

    struct boot_image kernel = {.name = cfg->kernel_path, .data = kdata, .size = ksize};
    struct boot_image initrd = {.name = cfg->initrd_path, .data = idata, .size = isize};
    rc = boot_load_images(mem, cfg, &kernel, cfg->initrd_path ? &initrd : NULL, out, err);
out:
    free(kdata);
    free(idata);
    return rc;
}
