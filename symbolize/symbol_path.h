/* Finding the symbol file of a module: --symbols DIR (repeatable). For each directory, in order:
 *   DIR/.build-id/xx/rest.debug and DIR/.build-id/xx/rest   (the GDB / debuginfod layout),
 *   any plain ELF file directly in DIR whose GNU build-id matches (scanned once, cached),
 *   a file in DIR with the module's basename (for modules recorded without a build-id).
 * Then the module's recorded name itself if it is a readable file whose build-id matches;
 * finally, with one set, a debuginfod server by the build-id.
 *
 * Before the plain files of the directories: each container root (--symbols ID=DIR,
 * docs/containers.md), the recorded path under DIR, for a module with a build-id that matches,
 * or without a build-id for a module of that container's processes only. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/vector.h"

struct symbol_path_entry {
    char *path;
    uint8_t build_id[64];
    uint32_t build_id_len;
};

/* A container's root file system: its id's prefix (or its name) and the directory. */
struct symbol_root {
    char *container;
    char *dir;
};

struct hv_debuginfod;
struct symbol_path {
    VECTOR(char *) dirs;
    VECTOR(struct symbol_root) roots;
    /* After every directory: a debuginfod server by build-id (symbolize/debuginfod.h), NULL:
     * none (the recorder never asks one). */
    struct hv_debuginfod *debuginfod;
    VECTOR(struct symbol_path_entry) scanned; /* plain files of all dirs, filled on first need */
    int scanned_done;
};

#define SYMBOL_PATH_MAX_SCAN 100000 /* files looked at per directory */

void symbol_path_init(struct symbol_path *sp);
void symbol_path_free(struct symbol_path *sp);
int symbol_path_add_dir(struct symbol_path *sp, const char *dir, struct hv_err *err);
/* --symbols ID=DIR: DIR as the root file system of container ID (an id's prefix or a name). */
int symbol_path_add_root(struct symbol_path *sp, const char *container, const char *dir,
                         struct hv_err *err);

/* Malloc'ed path of a file for the module, or NULL if none is found (not an error).
 * build_id may be NULL/0-length; name may be NULL. */
char *symbol_path_find(struct symbol_path *sp, const uint8_t *build_id, uint32_t build_id_len,
                       const char *name);
/* The same for a module mapped by processes of container `container` (its full id or name;
 * NULL: none known), which its roots are tried for even without a build-id. */
char *symbol_path_find_in(struct symbol_path *sp, const uint8_t *build_id, uint32_t build_id_len,
                          const char *name, const char *container);
