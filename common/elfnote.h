/* GNU build-id notes: the parser of an ELF note area and the hex form of an id. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define ELF_BUILD_ID_MAX                                                                           \
    64 /* GNU build-ids are 20 bytes (sha1) or 16 (md5/uuid); room for more                        \
        */

/* Parse an ELF note area (Elf64_Nhdr sequence, 4-byte aligned) for NT_GNU_BUILD_ID.
 * Bounded by `len`; returns the id length copied to `out` (<= ELF_BUILD_ID_MAX), 0 if none. */
uint32_t elf_notes_find_build_id(const uint8_t *notes, size_t len, uint8_t out[ELF_BUILD_ID_MAX]);

/* Lower-case hex of a build-id into `out` (2*len+1 bytes). */
void elf_build_id_hex(const uint8_t *id, uint32_t len, char *out);
