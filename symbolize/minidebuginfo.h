/* MiniDebugInfo: the `.gnu_debugdata` section Fedora's and RHEL's find-debuginfo leaves in a
 * stripped binary, an xz-compressed ELF file holding the local functions' `.symtab` (gdb's
 * "MiniDebugInfo", GDB manual section 18.4). Unpacked with liblzma, bounded. */
#pragma once

#include <stddef.h>

#include "common/err.h"

/* The most an unpacked section may hold: a hostile one cannot make a report take more (real
 * ones are a few hundred KiB: the .symtab of libc is ~200 KiB). */
#define MINIDEBUGINFO_MAX_BYTES (64u << 20)

/* Unpack an xz stream (`buf`, `len`) into a malloc'd buffer (*out, *outlen). 0, or -1 with err
 * (a corrupt stream, or one that unpacks to more than MINIDEBUGINFO_MAX_BYTES). */
int minidebuginfo_unpack(const void *buf, size_t len, void **out, size_t *outlen,
                         struct hv_err *err);
