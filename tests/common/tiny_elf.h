/* The smallest ELF64 kernel hvprof's loader accepts: one PT_LOAD segment holding `code`, loaded
 * and entered at 1 MiB (docs/boot-elf.md). For tests and benchmarks that need a real kernel
 * file without building one. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define TINY_ELF_ENTRY 0x100000u
#define TINY_ELF_CODE  0x1000u /* file offset of the code */

#include <elf.h>

/* An x86-64 ET_EXEC header with `phnum` program headers right behind it. */
Elf64_Ehdr tiny_elf_header(uint64_t entry, unsigned phnum);

/* Write the image into img (zeroed first); returns its size, or 0 if cap is too small. */
size_t tiny_elf_image(uint8_t *img, size_t cap, const uint8_t *code, size_t len);
