/* A user module's own file, on the drain thread, from where the guest keeps it: the guest
 * kernel says which file the page of the module's ELF header caches (guestos_user_page_file:
 * the file system's UUID and the inode), then its bytes come from a disk hvprof serves, read by
 * inode (diskfs/, docs/diskfs.md), else from the guest kernel's page cache (guestos_file_page:
 * the pages it holds; the others are holes, counted). Whoever uses the bytes checks the
 * build-id first (cfi_table_from_reader, module_symbols). And what each module's unwind tables
 * and names came from, for the summary's per-module lines (docs/user-modules.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "diskfs/diskfs.h"
#include "guestos/guestos.h"
#include "guestos/module.h"
#include "sampler/parts/cfi_file.h"

struct rec_env;

/* Where a module's unwind tables or names came from. */
enum module_from {
    FROM_NOTHING = 0,
    FROM_MEMORY, /* the module's own mapping in the process */
    FROM_CACHE,  /* its file's pages in the guest kernel's page cache */
    FROM_FILE,   /* record --symbols */
    FROM_DISK,   /* its file on a disk hvprof serves */
};

/* One module's account (per build-id). */
struct module_note {
    uint8_t build_id[64];
    uint32_t build_id_len;
    char name[DISCOVER_NAME_MAX];
    uint8_t cfi_from, syms_from; /* enum module_from */
    uint8_t fill_from;           /* FROM_CACHE or FROM_DISK: where pages not mapped came from */
    bool symtab;                 /* names from .symtab (static functions too), not .dynsym */
    bool minidebuginfo;          /* the .symtab was its MiniDebugInfo (.gnu_debugdata) */
    bool debug_file;             /* the .symtab was its separate debug file's (/usr/lib/debug) */
    bool no_eh_frame_hdr;        /* the module has no PT_GNU_EH_FRAME: frame pointers only */
    bool cfi_failed;             /* its tables could not be compiled (the CFI line says why) */
    bool counted;                /* its table's fill counted in the CFI summary line */
    uint64_t fdes, fdes_absent;  /* of the table in use */
    uint64_t fill_pages;         /* its CFI's pages read from fill_from */
    uint64_t fill_holes;         /* ... that the page cache did not hold */
};

/* What the looks found, for the summary. */
struct module_file_stats {
    uint64_t not_file;  /* the guest kernel tied the module's header page to no file */
    uint64_t elsewhere; /* a file on no disk hvprof reads (with disks) */
    uint64_t symtabs_disk, symtabs_cache; /* modules named from their file's .symtab */
    uint64_t debug_files; /* modules named from their debug file on a disk (/usr/lib/debug) */
    uint64_t disk_bytes, cache_bytes; /* read */
    uint64_t cache_holes;             /* pages the page cache did not hold, met by reads */
    char last_error[HV_ERR_MSG_MAX];
    VECTOR(struct module_note) notes;
};

struct module_file {
    const struct rec_env *env;
    struct guestos_file gf;  /* as the guest kernel knows it */
    struct diskfs_volume *v; /* its disk, or NULL: the page cache */
    uint64_t size;
    uint64_t holes;                    /* pages not cached, met by reads */
    uint64_t probe_va, probe_index;    /* a page of the image the process maps, and its index */
    char name[DISCOVER_NAME_MAX + 64]; /* "libc.so.6 (inode 1234 of disk 0)" */
};

/* m's file, or false; with `count`, why not is counted in the stats (once per module: the
 * symbols' look, which every module gets once, counts). The guest kernel tells it from the
 * page of m's ELF header, else, where the process does not map that page (a forked child's
 * file mappings fault in page by page), from the first of its segments' pages it maps: the
 * page index must be the one m's own program headers give that page. */
bool module_file_find(const struct rec_env *env, const struct guestos_as *as,
                      const struct discover_module *m, bool count, struct module_file *f);

/* Whether the file holds what the process maps: its first page the module's ELF header page
 * in guest memory (m's headers and, as linkers place it, its build-id note), or where the
 * header is not mapped (a forked child that never touched it), the page of the image that told
 * the file. Else a disk's copy of the file is another version
 * (replaced since, or the guest's writes in flight), and f falls back to the page cache when
 * the OS layer reads it. False: use none of its bytes. */
bool module_file_same(struct module_file *f, const struct guestos_as *as);

/* A cfi_file_reader over it (a read meeting a page not cached fails). */
struct cfi_file_reader module_file_reader(struct module_file *f);

/* Page `index` of the file into dst (4096 bytes): true when read whole. */
bool module_file_page(struct module_file *f, uint64_t index, void *dst);

/* Add m's .symtab functions, from its file, to the batch (guestos_symbol_fn, ctx). True when
 * the file had a .symtab of m's build: the batch then holds its functions; false (nothing
 * added): use what the guest's memory shows. */
bool module_file_symbols(const struct rec_env *env, const struct guestos_as *as,
                         const struct discover_module *m, guestos_symbol_fn fn, void *ctx);

/* m's account, created on first use; NULL when the table of accounts is full. */
struct module_note *module_note_of(const struct rec_env *env, const struct discover_module *m);

/* The summary's lines: what came from the disks and the page cache, and module by module. */
void module_files_summary(const struct rec_env *env, FILE *out);
void module_files_free(struct module_file_stats *st);
