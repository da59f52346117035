#include "common/elf_header.h"

#include <inttypes.h>
#include <string.h>

bool hv_elf_is_elf64(const void *bytes, size_t n)
{
    const uint8_t *b = bytes;
    return n > EI_CLASS && !memcmp(b, ELFMAG, SELFMAG) && b[EI_CLASS] == ELFCLASS64;
}

enum hv_elf_bad hv_elf64_header(const void *bytes, size_t n, const struct hv_elf_want *want,
                                Elf64_Ehdr *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out, bytes, n < sizeof(*out) ? n : sizeof(*out));
    if (n < SELFMAG || memcmp(out->e_ident, ELFMAG, SELFMAG))
        return n < SELFMAG ? HV_ELF_SHORT : HV_ELF_NOT_ELF;
    if (n < sizeof(*out))
        return HV_ELF_SHORT;
    if (out->e_ident[EI_CLASS] != ELFCLASS64)
        return HV_ELF_NOT_64;
    if (out->e_ident[EI_DATA] != ELFDATA2LSB)
        return HV_ELF_NOT_LE;
    if (out->e_machine != EM_X86_64)
        return HV_ELF_NOT_X86_64;
    if (out->e_type != ET_EXEC && (want->exec_only || out->e_type != ET_DYN))
        return HV_ELF_TYPE;
    if (out->e_phentsize != sizeof(Elf64_Phdr))
        return HV_ELF_PHENTSIZE;
    if (out->e_phnum == 0 || out->e_phnum > want->max_phnum)
        return HV_ELF_PHNUM;
    uint64_t bytes_ph = (uint64_t)out->e_phnum * sizeof(Elf64_Phdr);
    if (want->extent && (out->e_phoff > want->extent || bytes_ph > want->extent - out->e_phoff))
        return HV_ELF_PHOFF;
    return HV_ELF_OK;
}

int hv_elf64_header_err(const void *bytes, size_t n, const struct hv_elf_want *want,
                        Elf64_Ehdr *out, struct hv_err *err)
{
    switch (hv_elf64_header(bytes, n, want, out)) {
    case HV_ELF_OK:
        return 0;
    case HV_ELF_SHORT:
        return hv_errk(err, HV_ERR_CORRUPT, "truncated ELF: %zu bytes, shorter than the ELF header",
                       n);
    case HV_ELF_NOT_ELF:
        return hv_errk(err, HV_ERR_CORRUPT, "not an ELF file");
    case HV_ELF_NOT_64:
        return hv_errk(err, HV_ERR_UNSUPPORTED, "not an ELF64 file (ELF class %u)",
                       out->e_ident[EI_CLASS]);
    case HV_ELF_NOT_LE:
        return hv_errk(err, HV_ERR_UNSUPPORTED, "ELF file is not little-endian");
    case HV_ELF_NOT_X86_64:
        return hv_errk(err, HV_ERR_UNSUPPORTED, "ELF machine %u is not x86-64", out->e_machine);
    case HV_ELF_TYPE:
        return want->exec_only
                   ? hv_errk(err, HV_ERR_UNSUPPORTED, "ELF type %u is not an executable (ET_EXEC)",
                             out->e_type)
                   : hv_errk(err, HV_ERR_UNSUPPORTED,
                             "ELF type %u is not loadable (ET_EXEC or ET_DYN)", out->e_type);
    case HV_ELF_PHENTSIZE:
        return hv_errk(err, HV_ERR_CORRUPT, "e_phentsize %u is not %zu", out->e_phentsize,
                       sizeof(Elf64_Phdr));
    case HV_ELF_PHNUM:
        return hv_errk(err, HV_ERR_LIMIT, "%u program headers (1-%u supported)", out->e_phnum,
                       want->max_phnum);
    case HV_ELF_PHOFF:
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated ELF: program headers at 0x%" PRIx64
                       " are past the end of the file",
                       (uint64_t)out->e_phoff);
    }
    return hv_errk(err, HV_ERR_CORRUPT, "not an ELF file");
}
