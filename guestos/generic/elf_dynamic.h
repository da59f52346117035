/* What an ELF image's dynamic section tells, read from guest memory (record time, drain
 * thread): its soname, the dynamic loader's r_debug (DT_DEBUG, which the loader fills in the
 * executable: <link.h>'s stable debugger ABI), and its dynamic symbol table (DT_SYMTAB /
 * DT_STRTAB, counted through DT_GNU_HASH or DT_HASH), which names every exported function
 * without any file. gABI "Dynamic Section", "Hash Table"; the GNU hash layout as glibc's
 * dl-lookup.c and binutils write it.
 *
 * Guest memory is hostile: every count, offset and string is bounded, and a pointer is used
 * only when it lies inside the image. The loader relocates the d_ptr entries in place (glibc)
 * or not (the vDSO, other loaders), so a pointer is taken as a run-time address when it lies
 * in the image, else as a link-time address. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/module.h"

#define DYN_MAX_ENTRIES 512        /* dynamic entries examined */
#define DYN_MAX_SYMS    (1u << 18) /* symbols read from one image at most */
#define DYN_MAX_BUCKETS (1u << 20)
#define DYN_MAX_NAME    255 /* a longer symbol name is cut here */

struct elf_dynamic {
    uint64_t symtab, strtab, strsz, gnu_hash, hash; /* run-time addresses (0: absent) */
    uint64_t soname;                                /* string offset, UINT64_MAX: none */
    bool has_debug;
    uint64_t debug; /* DT_DEBUG's value: the loader's struct r_debug, 0 until it is set */
};

/* Read `m`'s dynamic section (m->dynamic, m->dynamic_size). false: it has none or it is
 * unreadable. */
bool elf_dynamic_read(discover_read_fn read, void *ctx, const struct discover_module *m,
                      struct elf_dynamic *d);

/* A string of the dynamic string table (at most `len` - 1 bytes, printable ASCII); false if
 * unreadable, empty, unterminated within the bound, or not printable. */
bool elf_dynamic_string(discover_read_fn read, void *ctx, const struct discover_module *m,
                        const struct elf_dynamic *d, uint64_t off, char *out, size_t len);

/* One dynamic symbol: a defined function (STT_FUNC, STT_GNU_IFUNC) at its link-time address
 * (the module-relative address of the recording's mappings), its size (0: unknown), 'T' global,
 * 'W' weak, 't' local, and its name (not NUL-terminated). Nonzero stops. */
typedef int (*elf_dynsym_fn)(void *ctx, uint64_t addr, uint64_t size, char type, const char *name,
                             size_t len);

/* The defined functions of the dynamic symbol table, in table order. Returns how many were
 * given, or -1 (no table, or its count cannot be read). */
long elf_dynamic_symbols(discover_read_fn read, void *ctx, const struct discover_module *m,
                         const struct elf_dynamic *d, elf_dynsym_fn fn, void *fn_ctx);

/* The same for the defined data objects (STT_OBJECT): a variable a debugger reads, such as
 * CPython's _PyRuntime (docs/python.md). */
long elf_dynamic_objects(discover_read_fn read, void *ctx, const struct discover_module *m,
                         const struct elf_dynamic *d, elf_dynsym_fn fn, void *fn_ctx);
