/* Function symbols, build-id and load layout of an ELF64 file, read with libelf.
 * Both a path and an in-memory image are accepted; the in-memory variant is what the fuzz target
 * drives, so every count and offset taken from the file is bounded before use. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/elfnote.h"
#include "common/err.h"
#include "symbolize/symtab.h"

#define ELF_MAX_FILE_SIZE (2ull << 30)

struct elf_symbols {
    struct symtab syms; /* STT_FUNC (+ STT_GNU_IFUNC) from .symtab, else .dynsym */
    uint8_t build_id[ELF_BUILD_ID_MAX];
    uint32_t build_id_len; /* 0 if the file has no NT_GNU_BUILD_ID note */
    uint16_t e_type;       /* ET_EXEC, ET_DYN, ... */
    uint64_t e_entry;
    /* Link-time address of file offset 0 (the ELF header) = lowest PT_LOAD (p_vaddr - p_offset),
     * page-floored. A module whose ELF header is found at runtime address A has load bias
     * A - link_base; every runtime address r maps to link address r - bias. */
    uint64_t link_base;
    uint64_t load_lo, load_hi; /* link-time extent of the PT_LOAD segments (0, 0 if none) */
    bool has_symtab;           /* .symtab was present (else only .dynsym, e.g. a stripped binary) */
    bool from_minidebuginfo;   /* the .symtab was the file's .gnu_debugdata's (MiniDebugInfo) */
};

/* Load from a file. `err` names the path on failure. */
int elf_symbols_load_file(struct elf_symbols *es, const char *path, struct hv_err *err);

/* Load from an image in memory (copied; `buf` is not kept). */
int elf_symbols_load_mem(struct elf_symbols *es, const void *buf, size_t len, struct hv_err *err);

/* Only the build-id (cheap: notes only, no symbols). Returns its length, 0 if none, -1 if the
 * file is not a readable ELF. */
int elf_read_build_id_file(const char *path, uint8_t out[ELF_BUILD_ID_MAX], struct hv_err *err);

void elf_symbols_free(struct elf_symbols *es);
