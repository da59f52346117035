/* Modules found through the files their pages cache, for code whose ELF header is mapped
 * nowhere in the process. fork() copies no page-table entries for file mappings (Linux
 * mm/memory.c, vma_needs_copy: they fault in again when touched), so a forked child that never
 * touched an image's header page, and whose parent has exited or is itself such a child (nginx's
 * workers: forked by a master that a daemonizing fork started), shows that image's code pages
 * and nothing to find it by in its own memory.
 *
 * Where the OS layer can tell which file a user page caches and at which page index
 * (guestos_user_page_file), and read the file's first page from the guest kernel's page cache
 * (guestos_file_page): for each executable range no module covers, the range's first page names
 * file and index; the file's own ELF and program headers say which PT_LOAD holds that page and
 * so where the image's header would be mapped (the bias is exact: the page's file offset and
 * link address are fixed by the headers). The image is then read as discover_elf_at reads any,
 * through the process's page tables where it maps the page and from the page cache where not.
 * Every page cache read is bounded; every guest value is checked. */
#pragma once

#include <stddef.h>

#include "guestos/guestos.h"
#include "guestos/module.h"

#define FILE_MODULES_MAX_RANGES 64 /* uncovered executable ranges examined per look */
#define FILE_MODULES_MAX_PAGES  16 /* page cache pages read per image */

/* Add to out[0..n) the images of those executable ranges of `as` (guestos_generic_discover_in
 * gives them) that none of them covers, found through their files. Returns the new count
 * (<= max). */
size_t guestos_file_modules(struct guestos *os, const struct gmem *mem, const struct guestos_as *as,
                            const struct discover_range *ranges, size_t nranges,
                            struct discover_module *out, size_t n, size_t max);
