/* Recognising Linux's page-table-isolation pairs from guest memory alone.
 *
 * With PTI (CONFIG_PAGE_TABLE_ISOLATION, on by default on Intel CPUs), every process has two
 * top-level tables in one 8 KiB, 8 KiB-aligned allocation: the kernel PGD and, 4 KiB above it,
 * the user PGD, which maps the user half and only an entry trampoline of the kernel half. In
 * user mode CR3 points at the user PGD (bit 12 set), in kernel mode at the kernel PGD. The two
 * copies of the user half are written together (pti_set_user_pgtbl, arch/x86/mm/pti.c): same
 * next-level tables, same permissions, except that the kernel copy of a present user entry also
 * has NX set. Hardware may set the Accessed bit in either copy on its own.
 *
 * So a root R with bit 12 set is the user half of the pair (R - 4 KiB, R) when the two pages'
 * user-half entries (0..255 with 4-level paging, 0..255 of the PML5 with 5-level) agree in
 * everything but NX, Accessed and Dirty, and at least one of them is present. Unrelated tables
 * never agree like that: each process has its own next-level tables. No guest help and no
 * knowledge of the guest OS is needed; a guest without PTI simply never has a pair. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "guestwalk/gmem.h"

#define PTI_USER_BIT (1ull << 12)

/* True if root (a top-level table's guest-physical address, bit 12 set) and root - 4 KiB form a
 * PTI pair. Reads at most 2 x 2 KiB of guest RAM; false if either page is outside RAM. */
bool pti_is_user_root(const struct gmem *m, uint64_t root, uint64_t addr_mask);

/* A small per-vCPU cache of that decision (direct-mapped by root): the exit path pays the
 * comparison once per top-level table, not once per sample. A "not a pair" answer is asked
 * again after PTI_RECHECK lookups, in case the guest was between the two writes of an update
 * when it was first seen. One writer (the vCPU thread). */
#define PTI_CACHE_ENTRIES 64
#define PTI_RECHECK       256
struct pti_cache {
    uint64_t key[PTI_CACHE_ENTRIES]; /* root + 1; 0 = empty */
    uint64_t canon[PTI_CACHE_ENTRIES];
    uint16_t recheck[PTI_CACHE_ENTRIES]; /* lookups left before a negative answer is redone */
    uint64_t lookups, misses;
};

void pti_cache_init(struct pti_cache *c);
/* The address space's canonical root: the kernel PGD for either half of a PTI pair, else root
 * itself. `root` is CR3 with the PCID and flag bits already masked. */
uint64_t pti_canonical_root(struct pti_cache *c, const struct gmem *m, uint64_t root,
                            uint64_t addr_mask);
