/* GNU build-id notes (ELF gABI "Note Section"; the NT_GNU_BUILD_ID note of GNU ld and lld).
 * Shared by the VMM (a kernel ELF it loads), module discovery in guest memory and the symbol
 * files of reports: the one parser of a note area, bounded by its length. */
#include "common/elfnote.h"

#include <elf.h>
#include <string.h>

static uint32_t align4(uint32_t v)
{
    return (v + 3u) & ~3u;
}

uint32_t elf_notes_find_build_id(const uint8_t *notes, size_t len, uint8_t out[ELF_BUILD_ID_MAX])
{
    /* Elf64_Nhdr = Elf32_Nhdr: namesz, descsz, type; name and desc each padded to 4 bytes
     * (ELF gABI "Note Section"; GNU uses 4-byte alignment for NT_GNU_BUILD_ID in ELF64 too). */
    size_t off = 0;
    while (off <= len && len - off >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, notes + off, 4);
        memcpy(&descsz, notes + off + 4, 4);
        memcpy(&type, notes + off + 8, 4);
        off += 12;
        uint64_t name_pad = align4(namesz > UINT32_MAX - 3 ? 0 : namesz);
        uint64_t desc_pad = align4(descsz > UINT32_MAX - 3 ? 0 : descsz);
        if (namesz > UINT32_MAX - 3 || descsz > UINT32_MAX - 3 || name_pad > len - off ||
            desc_pad > len - off - name_pad)
            return 0;
        const uint8_t *name = notes + off, *desc = notes + off + name_pad;
        off += name_pad + desc_pad;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(name, "GNU", 4) && descsz > 0) {
            uint32_t n = descsz < ELF_BUILD_ID_MAX ? descsz : ELF_BUILD_ID_MAX;
            memcpy(out, desc, n);
            return n;
        }
    }
    return 0;
}

void elf_build_id_hex(const uint8_t *id, uint32_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (uint32_t i = 0; i < len; i++) {
        out[2 * i] = hex[id[i] >> 4];
        out[2 * i + 1] = hex[id[i] & 15];
    }
    out[2 * len] = 0;
}
