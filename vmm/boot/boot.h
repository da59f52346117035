/* Guest loaders: put a kernel (ELF64 or Linux bzImage), its initrd and every boot-time structure
 * (GDT, identity page tables, command line, e820, MP table, boot info / zero page) into guest
 * memory, and compute the BSP's entry state. Pure "write into guest memory": no KVM fd here.
 *
 * Guest-physical layout: vmm/boot/hvprof_boot.h (numbers) and docs/boot-elf.md / docs/linux.md.
 * The pieces (GDT, page tables, e820, MP table, bzImage/ELF parsers, initrd placement) have their
 * own headers in this directory so tests and fuzzers can use them one at a time. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

/* Minimum guest RAM: room for the low structures, a kernel at 1 MiB and its stack/heap. */
#define BOOT_MIN_MEM_BYTES (16ull << 20)
/* Upper bound on --mem, far above what this project needs; keeps every sum overflow-free. */
#define BOOT_MAX_MEM_BYTES (1ull << 40)
/* vCPUs the boot structures describe: the ACPI MADT (every vCPU) and the MP table (up to 254,
 * vmm/boot/mptable.h). 1024 is KVM's own KVM_MAX_VCPUS on x86 (6.1). */
#define BOOT_MAX_CPUS 1024u

/* Used for a bzImage when boot_config.cmdline is NULL (boot.rst; docs/linux.md). */
#define BOOT_LINUX_DEFAULT_CMDLINE "console=ttyS0 earlyprintk=serial reboot=k panic=-1 pci=off"

#define BOOT_MAX_VIRTIO_MMIO 8u

struct boot_config {
    const char *kernel_path;
    const char *initrd_path; /* may be NULL */
    const char *cmdline;     /* NULL: BOOT_LINUX_DEFAULT_CMDLINE for a bzImage, none for ELF */
    unsigned nr_cpus;        /* 1..BOOT_MAX_CPUS; the MP table lists this many processors */
    uint64_t mem_bytes; /* guest RAM; the gmem must hold the regions layout_ram_regions() gives */
    /* virtio-MMIO devices for the DSDT (the VM's disks, vmm/disks.h): window and GSI. */
    unsigned nvirtio;
    struct {
        uint32_t base, size, gsi;
    } virtio[BOOT_MAX_VIRTIO_MMIO];
};

enum boot_kind { BOOT_ELF64, BOOT_BZIMAGE };

/* The BSP's entry state. APs are not given one: the guest starts them with INIT-SIPI-SIPI. */
/* A loaded ELF64 kernel as the profiler names it: its PT_LOAD segments at their link addresses
 * and its build-id (module and mapping records of the recording). */
struct boot_kernel_image {
    unsigned nseg;
    struct {
        uint64_t vaddr, memsz;
        uint64_t offset; /* p_offset: where the segment is in the file (pprof file_offset) */
        uint32_t flags;  /* PF_R | PF_W | PF_X */
    } seg[16];
    uint8_t build_id[64];
    uint32_t build_id_len;
    /* A bzImage (nseg = 0): [load, load + init_size), where its decompressor runs before the
     * kernel it unpacks (boot.rst, init_size); 0, 0 for an ELF kernel. */
    uint64_t bz_start, bz_end;
};

struct boot_entry {
    struct kvm_regs regs;   /* RIP, RSP, RSI (and RDI for ELF), RFLAGS = 0x2 */
    struct kvm_sregs sregs; /* cs/ds/es/fs/gs/ss/tr/ldt, gdt, idt, cr0/cr3/cr4/efer. apic_base,
                             * cr8 and interrupt_bitmap are left 0: merge with boot_apply_sregs() */
    enum boot_kind kind;
    uint64_t entry;      /* = regs.rip */
    uint64_t kernel_gpa; /* ELF: lowest PT_LOAD p_paddr; bzImage: where the payload was copied */
    uint64_t kernel_end; /* ELF: kernel_end_gpa; bzImage: end of [load, load + init_size) */
    uint64_t initrd_gpa; /* 0 if none */
    uint64_t initrd_size;
    uint64_t params_gpa;            /* struct hvprof_bootinfo (ELF) or zero page (bzImage) */
    struct boot_kernel_image image; /* ELF64 kernels; nseg = 0 for a bzImage */
};

struct ram_region {
    uint64_t gpa, size;
};

/* Guest RAM for `mem_bytes`: [0, min(mem, HVPROF_MMIO_GAP_START)) and, above 3 GiB, the rest at
 * HVPROF_MMIO_GAP_END (4 GiB). *n = 1 or 2. Fails (with a message naming --mem) below
 * BOOT_MIN_MEM_BYTES, above BOOT_MAX_MEM_BYTES or when not a multiple of 4 KiB. */
int layout_ram_regions(uint64_t mem_bytes, struct ram_region out[2], unsigned *n,
                       struct hv_err *err);

/* Read cfg->kernel_path (and initrd_path), detect ELF64 vs bzImage by magic and write everything
 * into `mem`, whose slots must cover layout_ram_regions(cfg->mem_bytes). Errors are one line
 * naming the file: "vmlinuz: bzImage protocol 2.11 < 2.12 (no 64-bit boot protocol)". */
int boot_load(struct gmem *mem, const struct boot_config *cfg, struct boot_entry *out,
              struct hv_err *err);

/* A file already in memory; `name` is used in error messages. */
struct boot_image {
    const char *name;
    const uint8_t *data;
    size_t size;
};

/* boot_load on in-memory files (tests, fuzzers). `initrd` may be NULL; cfg's paths are ignored. */
int boot_load_images(struct gmem *mem, const struct boot_config *cfg,
                     const struct boot_image *kernel, const struct boot_image *initrd,
                     struct boot_entry *out, struct hv_err *err);

/* Copy the boot state into `dst` (typically what KVM_GET_SREGS returned), keeping dst's
 * apic_base, cr2, cr8 and interrupt_bitmap. */
void boot_apply_sregs(struct kvm_sregs *dst, const struct kvm_sregs *boot);
