/* The executables of a Linux guest's user processes read whole from its page cache
 * (guestos/linux/pagecache.h), for the captures: hvprof-capture reads them so that a capture
 * holds the XArray nodes, struct pages and file pages of each, and test_captured reads them
 * again from the capture and compares them with the guest's own account (its `crc32` of the
 * file, HVTEST file lines). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/kernel.h"

#define EXE_FILES_MAX 8

struct exe_file {
    uint64_t mapping; /* its address_space */
    uint64_t ino, size;
    uint64_t pages, cached, holes, bad; /* 4 KiB pages: of the file, read, not cached, refused */
    uint32_t crc32;                     /* zlib's, over the file's bytes when all were cached */
};

/* Up to EXE_FILES_MAX distinct executables; returns how many, or -1 with why. */
int exe_files_read(struct lx_kernel *k, const struct gmem *mem, struct exe_file *out, char *why,
                   size_t why_len);
