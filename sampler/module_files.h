/* A user module's own file on a disk hvprof serves (docs/diskfs.md), on the drain thread: the
 * guest kernel says which file the page of its ELF header caches (guestos_user_page_file: the
 * file system's UUID and the inode), and diskfs reads it from the image. Whoever uses the bytes
 * checks the build-id first (cfi_table_from_reader, disk_symbols). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "diskfs/diskfs.h"
#include "guestos/guestos.h"
#include "guestos/module.h"
#include "sampler/cfi_file.h"

struct sampler;

/* What the looks found, for the summary. */
struct sampler_disk_stats {
    uint64_t not_file;  /* the guest kernel tied the module's header page to no file */
    uint64_t elsewhere; /* a file on no disk hvprof reads */
    uint64_t symtabs;   /* modules named from their file's .symtab */
    uint64_t bytes;     /* read from the disks */
    char last_error[HV_ERR_MSG_MAX];
};

struct sampler_disk_file {
    struct diskfs_volume *v;
    uint64_t ino, size;
    struct sampler_disk_stats *st;
    char name[DISCOVER_NAME_MAX + 64]; /* "libc.so.6 (inode 1234 of disk 0)" */
};

/* m's file on the disks, or false; with `count`, why not is counted in the stats (once per
 * module: the symbols' look, which every module gets once, counts). */
bool sampler_disk_file(struct sampler *s, const struct guestos_as *as,
                       const struct discover_module *m, bool count, struct sampler_disk_file *f);

/* A cfi_file_reader over it. */
struct cfi_file_reader sampler_disk_reader(struct sampler_disk_file *f);

/* Add m's .symtab functions, from its file on the disks, to the batch (guestos_symbol_fn, ctx).
 * True when the file had a .symtab of m's build: the batch then holds its functions; false
 * (nothing added): use what the guest's memory shows. */
bool sampler_disk_symbols(struct sampler *s, const struct guestos_as *as,
                          const struct discover_module *m, guestos_symbol_fn fn, void *ctx);

/* The summary's line: what came from the disks and why not more. Nothing without disks. */
void sampler_disk_summary(const struct sampler *s, FILE *out);
