/* A module's DWARF CFI compiled from its ELF file (sampler/parts/cfi_file.c): a file on the host
 * (record --symbols) or a file of a disk hvprof serves, read by inode (diskfs/). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/cfi.h"

/* Where the file's bytes come from. */
struct cfi_file_reader {
    const char *name; /* for messages */
    uint64_t size;    /* bytes in the file */
    /* Copy len bytes at off; false if they cannot be read whole. */
    bool (*read)(void *ctx, uint64_t off, void *dst, size_t len);
    void *ctx;
};

/* NULL with err when the file cannot be read, holds no usable .eh_frame_hdr, or (when
 * build_id_len) its build-id note is not `build_id`: the file is another build than the module
 * the guest runs (or one changed on disk since). */
struct cfi_table *cfi_table_from_reader(const struct cfi_file_reader *r, const uint8_t *build_id,
                                        uint32_t build_id_len, struct hv_err *err);

/* The same from a host file (found by build-id by the caller). */
struct cfi_table *cfi_table_from_file(const char *path, struct hv_err *err);
