/* Module discovery in a live guest address space: the executable user ranges come from the
 * guest's own page tables (guestwalk pt_for_each_mapping), and the ELF headers are read through
 * the same translation (user access), bounded. Meant for record time, outside the vCPU exit path
 * (it walks the whole lower half, up to DISCOVER_GUEST_MAX_ENTRIES entries). */
#pragma once

#include <stddef.h>

#include "guestwalk/gmem.h"
#include "guestwalk/paging.h"
#include "guestos/guestos.h"
#include "guestos/module.h"

#define DISCOVER_GUEST_MAX_ENTRIES (1u << 20) /* page-table entries read per address space */
#define DISCOVER_GUEST_MAX_RANGES  1024

struct discover_guest_stats {
    size_t ranges;   /* executable user ranges found */
    int iter_result; /* enum pt_iter_result */
};

/* The executable user ranges of the address space `mmu` describes (its lower half), adjacent
 * pages merged, in address order: at most DISCOVER_GUEST_MAX_RANGES into out. iter_result (if
 * not NULL): the page-table walk's enum pt_iter_result. */
size_t discover_guest_ranges(const struct gmem *mem, const struct pt_mmu *mmu,
                             struct discover_range *out, int *iter_result);

/* Modules of those ranges of the address space `mmu` describes. */
size_t discover_guest_modules_in(const struct gmem *mem, const struct pt_mmu *mmu,
                                 const struct discover_range *ranges, size_t nranges,
                                 struct discover_module *out, size_t max);

/* Modules of the address space `mmu` describes (its lower half). Returns how many were written
 * to `out` (<= max). */
size_t discover_guest_modules(const struct gmem *mem, const struct pt_mmu *mmu,
                              struct discover_module *out, size_t max,
                              struct discover_guest_stats *st);

/* Copy len bytes of that address space at va as user-mode reads; false if any is unmapped. */
bool discover_guest_read(const struct gmem *mem, const struct pt_mmu *mmu, uint64_t va, void *dst,
                         size_t len);

/* The code symbols of module `m` of that address space from its dynamic symbol table
 * (guestos/generic/elf_dynamic.h), given as guestos symbols at link-time addresses. Returns how
 * many, or -1 if it has no readable table. */
long discover_guest_symbols(const struct gmem *mem, const struct pt_mmu *mmu,
                            const struct discover_module *m, guestos_symbol_fn fn, void *ctx);

/* The link-time addresses of the data objects `names` (n of them) in module `m`'s dynamic
 * symbol table, into addrs (0: not found). Returns how many were found. */
size_t discover_guest_objects(const struct gmem *mem, const struct pt_mmu *mmu,
                              const struct discover_module *m, const char *const *names, size_t n,
                              uint64_t *addrs);
