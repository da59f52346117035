/* Freestanding ELF64 x86-64 kernels (our test guest): PT_LOAD segments at their physical
 * addresses, entered in long mode with struct hvprof_bootinfo (docs/boot-elf.md). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/elfnote.h"
#include "common/err.h"
#include "vmm/boot/boot_ctx.h"

#define ELF64_MAX_SEGMENTS 16u
#define ELF64_MAX_PHNUM    256u

struct elf64_segment {
    uint64_t paddr, memsz, filesz, offset;
    uint64_t vaddr; /* link address: where the kernel's own page tables will map it */
    uint32_t flags; /* PF_R | PF_W | PF_X */
};

struct elf64_info {
    uint64_t entry;
    unsigned nseg; /* PT_LOAD segments with p_memsz > 0 */
    struct elf64_segment seg[ELF64_MAX_SEGMENTS];
    uint64_t lowest;                    /* lowest p_paddr */
    uint64_t end;                       /* highest p_paddr + p_memsz */
    uint8_t build_id[ELF_BUILD_ID_MAX]; /* from the first PT_NOTE with NT_GNU_BUILD_ID */
    uint32_t build_id_len;              /* 0 without one */
};

/* Structural checks (no file name in messages): ELF64, little-endian, x86-64, ET_EXEC, program
 * headers inside the file, at most ELF64_MAX_SEGMENTS non-empty PT_LOADs, each with
 * filesz <= memsz, file data inside the file, p_paddr >= HVPROF_KERNEL_MIN, no overflow, no two
 * segments overlapping, and e_entry inside some segment's [p_paddr, p_paddr + p_filesz). */
int elf64_parse(const uint8_t *img, size_t len, struct elf64_info *out, struct hv_err *err);

/* Load for ctx: every segment must lie in RAM; bss zeroed; command line (if any), initrd (highest
 * page-aligned spot below the MMIO gap, clear of the segments) and struct hvprof_bootinfo at
 * HVPROF_LOW_BOOTINFO. Fills out (except regs/sregs). */
int elf64_load(const struct boot_ctx *ctx, const struct boot_image *kernel,
               const struct boot_image *initrd, const char *cmdline, struct boot_entry *out,
               struct hv_err *err);
