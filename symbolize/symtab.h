/* A sorted table of function symbols with lookup by address. Shared by every symbol source (ELF
 * .symtab/.dynsym, kallsyms, System.map), so lookups behave the same whatever the source. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/vector.h"

struct sym {
    uint64_t addr;    /* link-time address (ELF st_value, kallsyms/System.map address) */
    uint64_t size;    /* bytes; 0 = unknown: the symbol extends to the next one (asm labels) */
    uint32_t name;    /* offset into symtab.names */
    uint8_t strength; /* tie-break among aliases, stronger wins (ELF: 3 global, 2 weak, 1 local,
                       * 0 untyped code label; kallsyms: 2 T, 1 W/w, 0 t) */
};

struct symtab {
    VECTOR_FIELDS(struct sym);
    VECTOR(char) names; /* NUL-separated pool */
    int sorted;
};

/* Bounds that keep a hostile file from exhausting memory (any real vmlinux is far below). */
#define SYMTAB_MAX_SYMS     (8u << 20)
#define SYMTAB_MAX_NAME_LEN 1024

void symtab_init(struct symtab *t);
void symtab_free(struct symtab *t);

/* Append one symbol (name copied, truncated at SYMTAB_MAX_NAME_LEN). Invalidates sorting. */
int symtab_add(struct symtab *t, uint64_t addr, uint64_t size, const char *name, size_t name_len,
               uint8_t strength, struct hv_err *err);

/* Sort by address, drop aliases (same address: keep the strongest, then the sized one, then the
 * shortest name), and bound every unsized symbol by the next symbol's address. Idempotent. */
void symtab_finish(struct symtab *t);

/* The function containing `addr`, or NULL. A sized symbol contains [addr, addr+size); an unsized
 * one contains everything up to the next symbol. A symbol with an empty name is an end marker
 * (the end of an ELF code section): addresses it covers resolve to NULL. Callers that symbolize a
 * *return address* pass ra - 1, so a call as the last instruction of a function still resolves to
 * its caller (symbolizer markup "ra" frames, LLVM SymbolizerMarkupFormat.rst). Needs
 * symtab_finish(). */
const struct sym *symtab_lookup(const struct symtab *t, uint64_t addr);

/* Exact-name search (linear; for anchors such as entry_SYSCALL_64). NULL if absent. */
const struct sym *symtab_find_name(const struct symtab *t, const char *name);

static inline const char *symtab_name(const struct symtab *t, const struct sym *s)
{
    return t->names.v + s->name;
}
