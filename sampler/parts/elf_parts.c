#include "sampler/parts/elf_parts.h"

#include <elf.h>
#include <string.h>

static bool read_at(const struct cfi_file_reader *r, uint8_t *buf, uint64_t off, uint64_t len)
{
    return off <= r->size && len <= r->size - off && (!len || r->read(r->ctx, off, buf + off, len));
}

bool elf_symbol_parts_read(const struct cfi_file_reader *r, uint8_t *buf)
{
    Elf64_Ehdr eh;
    if (!read_at(r, buf, 0, sizeof(eh)))
        return false;
    memcpy(&eh, buf, sizeof(eh));
    /* gABI "ELF Header": 64-bit, section headers of Elf64_Shdr's size, inside the file. */
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum ||
        eh.e_shnum > ELF_PARTS_MAX_SECTIONS ||
        !read_at(r, buf, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
        return false;
    if (eh.e_phoff && !read_at(r, buf, eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize))
        return false;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, buf + eh.e_shoff + i * sizeof(sh), sizeof(sh));
        if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_STRTAB ||
             sh.sh_type == SHT_NOTE) &&
            !read_at(r, buf, sh.sh_offset, sh.sh_size))
            return false;
    }
    return true;
}
