/* The parts of an ELF file a symbol table is read from (symbolize/elf_symbols.c: the ELF
 * header, the program and section headers, the symbol, string and note sections), read from a
 * module's file through a reader that may miss pages (the guest's page cache): nothing else of
 * the file is read, so a .symtab at the end of a large file costs only its own pages. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "sampler/parts/cfi_file.h"

/* Sections read at most (ELF files have tens). */
#define ELF_PARTS_MAX_SECTIONS 4096

/* Into buf (r->size bytes, zeroed by the caller) at their file offsets. False when one of them
 * cannot be read (a page missing, a header outside the file, not ELF64): the caller then uses
 * none of it. */
bool elf_symbol_parts_read(const struct cfi_file_reader *r, uint8_t *buf);
