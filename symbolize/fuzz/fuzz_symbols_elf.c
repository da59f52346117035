/* libFuzzer: ELF symbol/build-id loading from an untrusted in-memory image (libelf + our
 * bounds), plus lookups on whatever loaded. */
#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf_symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t id[ELF_BUILD_ID_MAX];
    elf_notes_find_build_id(data, size, id);
    struct elf_symbols es;
    if (elf_symbols_load_mem(&es, data, size, NULL) == 0) {
        for (size_t i = 0; i < es.syms.n && i < 64; i++)
            symtab_lookup(&es.syms, es.syms.v[i].addr + i);
        elf_symbols_free(&es);
    }
    return 0;
}
