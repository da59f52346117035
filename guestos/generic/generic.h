/* The OS-agnostic layer: what any x86-64 guest's CPU state and memory tell without knowing its
 * kernel. Identity: address space = CR3 bits [51:12], with the two halves of a Linux PTI pair
 * folded into one; thread = (address space, FS base). Modules: ELF images under the executable
 * user mappings of the guest's own page tables. Stacks: frame pointers. */
#pragma once

#include "guestos/guestos.h"
#include "guestwalk/paging.h"

extern const struct guestos_ops guestos_generic_ops;

/* The generic operations, for layers that build on them (guestos/linux/). */
void guestos_generic_identify(const struct guestos *os, struct guestos_vcpu *vc,
                              const struct gmem *mem, struct gw_snapshot *snap,
                              struct guestos_ident *out);
size_t guestos_generic_discover_modules(struct guestos *os, const struct gmem *mem,
                                        const struct guestos_as *as, struct discover_module *out,
                                        size_t max);
/* The translation of the address space's user half (a PTI process's user PGD); false: not
 * long mode. */
bool guestos_generic_user_mmu(const struct gmem *mem, const struct guestos_as *as,
                              struct pt_mmu *mmu);
/* The guest-physical address user address va maps to in the address space; false if not
 * mapped for user access. */
bool guestos_generic_user_gpa(const struct gmem *mem, const struct guestos_as *as, uint64_t va,
                              uint64_t *gpa);
/* Do two address spaces map user page va to the same guest-physical page (a file's page a forked
 * child shares with its parent)? */
bool guestos_generic_shared_page(const struct gmem *mem, const struct guestos_as *a,
                                 const struct guestos_as *b, uint64_t va);

/* The same, with the executable user ranges it looked at (at most DISCOVER_GUEST_MAX_RANGES
 * into ranges, *nranges of them) for callers that look further (file_modules.h). */
size_t guestos_generic_discover_in(const struct gmem *mem, const struct guestos_as *as,
                                   struct discover_range *ranges, size_t *nranges,
                                   struct discover_module *out, size_t max);
/* Copy len bytes of the address space's user memory at va (user-mode access); false if any
 * byte is not mapped. */
bool guestos_generic_read_user(const struct gmem *mem, const struct guestos_as *as, uint64_t va,
                               void *dst, size_t len);
long guestos_generic_module_symbols(const struct guestos *os, const struct gmem *mem,
                                    const struct guestos_as *as, const struct discover_module *m,
                                    guestos_symbol_fn fn, void *ctx);

/* CR3 bits [51:12]: the top-level table's guest-physical address (SDM Vol. 3A §4.5.2: bits
 * 11:0 are the PCID or PWT/PCD, bits 63:52 the no-flush and LAM controls). */
#define GUESTOS_CR3_ADDR_MASK 0x000ffffffffff000ull
