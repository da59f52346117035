/* A module's DWARF CFI compiled from its ELF file (sampler/cfi_file.c). */
#pragma once

#include "common/err.h"
#include "guestwalk/cfi.h"

/* NULL with err when the file cannot be read or holds no usable .eh_frame_hdr. */
struct cfi_table *cfi_table_from_file(const char *path, struct hv_err *err);
