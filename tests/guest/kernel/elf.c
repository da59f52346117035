/* Loads a static ELF64 x86-64 executable (System V gABI, "Program Loading") into a user address
 * space at the addresses the linker chose. Each PT_LOAD's pages get the file bytes of the whole
 * page range, so the ELF header, program headers and PT_NOTE (build ID), which the linker puts
 * in the first PT_LOAD at offset 0, are readable in user memory exactly as in the file. */
#include "kernel.h"

struct elf64_ehdr {
    u8 ident[16];
    u16 type, machine;
    u32 version;
    u64 entry, phoff, shoff;
    u32 flags;
    u16 ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct elf64_phdr {
    u32 type, flags;
    u64 offset, vaddr, paddr, filesz, memsz, align;
};

#define PT_LOAD   1
#define PF_W      2
#define ET_EXEC   2
#define EM_X86_64 62

int elf_load(u64 pml4, const u8 *img, u64 size, u64 *entry, const char **why)
{
    const struct elf64_ehdr *eh = (const void *)img;
    if (size < sizeof(*eh) ||
        memcmp(eh->ident,
               "\x7f"
               "ELF",
               4) ||
        eh->ident[4] != 2 || eh->ident[5] != 1 || eh->type != ET_EXEC || eh->machine != EM_X86_64)
        return *why = "not a static ELF64 x86-64 executable", -1;
    if (eh->phentsize != sizeof(struct elf64_phdr) || eh->phnum > 16 || eh->phoff > size ||
        (u64)eh->phnum * sizeof(struct elf64_phdr) > size - eh->phoff)
        return *why = "bad program headers", -1;
    const struct elf64_phdr *ph = (const void *)(img + eh->phoff);
    int loaded = 0;
    for (int i = 0; i < eh->phnum; i++) {
        const struct elf64_phdr *p = &ph[i];
        if (p->type != PT_LOAD || p->memsz == 0)
            continue;
        if (p->filesz > p->memsz || p->offset > size || p->filesz > size - p->offset ||
            p->vaddr < USER_IMAGE_MIN || p->vaddr >= USER_IMAGE_MAX ||
            p->memsz > USER_IMAGE_MAX - p->vaddr || (p->vaddr & 0xfff) != (p->offset & 0xfff))
            return *why = "bad PT_LOAD segment", -1;
        u64 flags = PTE_U | ((p->flags & PF_W) ? PTE_W : 0);
        u64 file_start =
            p->offset & ~0xfffull; /* the page-aligned file range backing the VA range */
        u64 file_end = p->offset + p->filesz;
        for (u64 va = p->vaddr & ~0xfffull; va < p->vaddr + p->memsz; va += 4096) {
            /* Pages shared by two segments (same page, different flags) are mapped once, with
             * the union of the flags, by loading each segment's bytes into the same frame. */
            u64 *pte = vm_pte(pml4, va);
            if (!(*pte & PTE_P))
                *pte = phys_alloc(4096) | PTE_P;
            *pte |= flags;
            u64 pa = *pte & PTE_ADDR;
            u64 off = file_start + (va - (p->vaddr & ~0xfffull));
            /* Bytes of this page that the segment covers: [seg_lo, seg_hi) in page offsets. */
            u64 seg_lo = va < p->vaddr ? p->vaddr - va : 0;
            u64 lo = off + seg_lo;
            u64 hi = off + 4096 < file_end ? off + 4096 : file_end;
            /* Page 0 of the first segment also carries the bytes before p_offset (ELF header). */
            if (va == (p->vaddr & ~0xfffull) && file_start == 0)
                lo = 0;
            if (lo < hi)
                memcpy((u8 *)phys_to_virt(pa) + (lo - off), img + lo, hi - lo);
        }
        loaded++;
    }
    if (!loaded)
        return *why = "no PT_LOAD segments", -1;
    if (eh->entry < USER_IMAGE_MIN || eh->entry >= USER_IMAGE_MAX)
        return *why = "bad entry point", -1;
    *entry = eh->entry;
    return 0;
}
