/* Guest RAM behind a fixed kernel direct map, for the targets and tests whose subject is what
 * the kernel's structures say, not its page tables (those are fuzzed by guestwalk's targets):
 * RAM at guest-physical 0 is mapped at DIRECT_MAP_VA by page tables the harness owns, in a
 * slot of their own at DIRECT_PT_GPA (a 2 MiB page: PML4[273] -> PDPT[0] -> PD[0]). */
#pragma once

#include <stdint.h>
#include <string.h>

#include "guestwalk/gmem.h"

#define DIRECT_MAP_VA 0xffff888000000000ull
#define DIRECT_PT_GPA 0x40000000ull

struct direct_tables {
    uint64_t pml4[512], pdpt[512], pd[512];
} __attribute__((aligned(4096)));

/* Add the tables to mem (which holds the RAM at 0); returns the root's guest-physical address,
 * or 0 when the slot cannot be added. */
static inline uint64_t direct_map_add(struct gmem *mem, struct direct_tables *t)
{
    memset(t, 0, sizeof(*t));
    t->pml4[(DIRECT_MAP_VA >> 39) & 511] = (DIRECT_PT_GPA + 4096) | 3;
    t->pdpt[(DIRECT_MAP_VA >> 30) & 511] = (DIRECT_PT_GPA + 8192) | 3;
    t->pd[(DIRECT_MAP_VA >> 21) & 511] = 0 | 0x83; /* present, writable, 2 MiB */
    if (gmem_add(mem, DIRECT_PT_GPA, sizeof(*t), t, NULL) < 0)
        return 0;
    return DIRECT_PT_GPA;
}
