#include "tests/common/tiny_elf.h"

#include <string.h>

Elf64_Ehdr tiny_elf_header(uint64_t entry, unsigned phnum)
{
    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_entry = entry;
    eh.e_phoff = sizeof(eh);
    eh.e_ehsize = sizeof(eh);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = (uint16_t)phnum;
    return eh;
}

size_t tiny_elf_image(uint8_t *img, size_t cap, const uint8_t *code, size_t len)
{
    if (cap < TINY_ELF_CODE + len)
        return 0;
    memset(img, 0, cap);
    Elf64_Ehdr eh = tiny_elf_header(TINY_ELF_ENTRY, 1);
    Elf64_Phdr ph = {.p_type = PT_LOAD,
                     .p_flags = PF_R | PF_X,
                     .p_offset = TINY_ELF_CODE,
                     .p_vaddr = TINY_ELF_ENTRY,
                     .p_paddr = TINY_ELF_ENTRY,
                     .p_filesz = len,
                     .p_memsz = len,
                     .p_align = 0x1000};
    memcpy(img, &eh, sizeof(eh));
    memcpy(img + sizeof(eh), &ph, sizeof(ph));
    memcpy(img + TINY_ELF_CODE, code, len);
    return TINY_ELF_CODE + len;
}
