/* Writing discovered modules into a recording (record time): module records once per module
 * (by build-id, or by name and header address without one) and mapping records once per
 * (address space, start), with the koids and layouts of docs/fxt-samples.md section 3. The
 * sampler calls this after the OS layer discovered the modules of an address space it has seen,
 * and once for a guest kernel ELF the VMM loaded (address space 0, bias 0). Not for the vCPU
 * exit path (allocates, writes the file): the drain/control thread owns the writer. A module
 * without a name is recorded as "[elf@0x<header>]" (HVFXT_MODULE_PLACEHOLDER_FMT). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/vector.h"
#include "fxt/writer.h"
#include "guestos/module.h"
#include "sampler/parts/meta_budget.h"

struct discover_registry_module {
    uint8_t build_id[64];
    uint32_t build_id_len;
    uint64_t header_va;
    char name[DISCOVER_NAME_MAX];
    uint64_t id;
    /* Symbols from the guest's memory (sampler/sources/user_modules/user_modules.c): recorded, or looks that found none. */
    bool symbols_recorded;
    uint8_t symbol_looks;
    bool file_symbols_tried; /* its file's .symtab looked for (disks, page cache) */
};

struct discover_registry_mapping {
    uint64_t pid, start, module_id;
};

struct discover_registry {
    VECTOR(struct discover_registry_module) mods;
    VECTOR(struct discover_registry_mapping) maps;
    uint64_t next_id; /* module ids start at 1 */
    /* The recording's metadata budget (NULL: none): a module or mapping record that does not
     * fit is left out (a module's mappings with it) and counted there. */
    struct meta_budget *budget;
};

void discover_registry_init(struct discover_registry *r);
void discover_registry_free(struct discover_registry *r);

/* The id of a module already recorded (same key as discover_record uses), or -1. */
int64_t discover_registry_id(const struct discover_registry *r, const uint8_t *build_id,
                             uint32_t build_id_len, const char *name, uint64_t header_va);

/* The registry's entry for a module discover_record wrote (same key), or NULL. */
struct discover_registry_module *discover_registry_find(struct discover_registry *r,
                                                        const struct discover_module *m);

/* Address space `pid_koid` ended: its mappings are forgotten (a later one under another koid
 * gets its own records). Modules stay: another process may map them. */
void discover_registry_forget(struct discover_registry *r, uint64_t pid_koid);

/* Write what is new among `m[0..n)` for address space `pid_koid` (hvfxt_koid_guest_process).
 * Returns the number of records written, or -1. */
int discover_record(struct fxt_writer *w, struct discover_registry *reg, uint64_t pid_koid,
                    const struct discover_module *m, size_t n, uint64_t ts, struct hv_err *err);

/* One module `m` of address space `pid_koid` (a guest kernel's, a labelled range's: address
 * space 0) recorded as discover_record does: its module id, -2 when the metadata budget left
 * it out (counted there), or -1 when the file cannot be written. */
int64_t discover_record_module(struct fxt_writer *w, struct discover_registry *reg,
                               uint64_t pid_koid, const struct discover_module *m, uint64_t ts,
                               struct hv_err *err);
