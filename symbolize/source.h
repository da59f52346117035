/* One module's symbols, wherever they come from, and the act of symbolizing an address in it.
 * The sources, best first: an ELF symbol file of the same build (found by build-id or name on
 * the symbol path, or given as a kernel's vmlinux: libelf, elf_symbols.h), a kernel's kallsyms
 * or System.map text (kallsyms.h), and the symbols the recording carries from guest memory
 * (the kernel's kallsyms, a module's or shared object's dynamic symbols: added one by one).
 * Source lines come from the ELF file's DWARF (libdw, dwarf_lines.h), opened on first use.
 *
 * The report's profile model (report/profile.h) keeps one per module; this file knows nothing
 * of samples, locations or functions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/elfnote.h"
#include "common/err.h"
#include "symbolize/dwarf_lines.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/symbol_path.h"
#include "symbolize/symtab.h"

struct sym_source {
    char *file;                /* the symbol file the symbols came from, NULL if none */
    struct elf_symbols *elf;   /* owned; an ELF symbol file */
    struct symtab *table;      /* owned; kallsyms text or the recording's own symbols */
    struct dwarf_lines *lines; /* owned; the ELF file's DWARF, opened on first use */
    bool lines_tried;          /* `lines` was looked for (NULL: the file has none) */
};

/* What an address is. */
struct sym_hit {
    const char *name; /* the function (owned by the source) */
    uint64_t offset;  /* from its start */
    /* With lines: the source line and where the function is declared (dwarf_lines.h); file
     * NULL when the DWARF does not cover the address or there is none. */
    struct src_line line;
};

void sym_source_free(struct sym_source *s);

/* The symbols in use: an ELF file's over any other. NULL: none. */
const struct symtab *sym_source_symtab(const struct sym_source *s);
static inline bool sym_source_has_file(const struct sym_source *s)
{
    return s->elf != NULL;
}

/* Look for the module's ELF file on the symbol path (build-id first, then name) and load it.
 * 1: loaded (it replaces the ELF file's absence, not the recording's symbols, which stay as a
 * fallback); 0: none usable (not found, another build, a foreign or cut-off file: the module
 * keeps what it had); -1 only when memory ran out (err). */
int sym_source_find(struct sym_source *s, struct symbol_path *sp, const uint8_t *build_id,
                    uint32_t build_id_len, const char *name, struct hv_err *err);
/* The same for a module of container `container`'s processes (symbol_path_find_in). */
int sym_source_find_in(struct sym_source *s, struct symbol_path *sp, const uint8_t *build_id,
                       uint32_t build_id_len, const char *name, const char *container,
                       struct hv_err *err);

/* A kernel's symbols from `path`: a vmlinux (ELF, its build-id must be `build_id` when both are
 * known) or kallsyms / System.map text. Replaces what the source had. */
int sym_source_load_kernel(struct sym_source *s, const char *path, const uint8_t *build_id,
                           uint32_t build_id_len, struct hv_err *err);

/* A symbol the recording carries (its table, created on first use; `strength` as symtab.h).
 * Ignored (0) when an ELF file is loaded already: it has them all. sym_source_finish() sorts. */
int sym_source_add(struct sym_source *s, uint64_t addr, const char *name, size_t len,
                   uint8_t strength, struct hv_err *err);
void sym_source_finish(struct sym_source *s);

/* Where the module's names come from, for a reader (`report -v`, pprof's mapping, docs/report.md
 * "How frames are symbolized"): "debuginfod (.symtab)", "/usr/lib/debug/x.debug (.symtab)",
 * "/lib/libc.so.6 (MiniDebugInfo)", "/boot/System.map (kallsyms text)", "the recording" when it
 * uses only what the recording carries, "none" with no symbols at all. Writes at most len bytes;
 * returns buf. */
const char *sym_source_origin(const struct sym_source *s, char *buf, size_t len);

/* Symbolize link-time address `addr` (for a return address, the call's: ra - 1); with `lines`,
 * its source line too. False: no function covers it. */
bool sym_source_lookup(struct sym_source *s, uint64_t addr, bool lines, struct sym_hit *out);
