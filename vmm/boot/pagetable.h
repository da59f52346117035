/* Boot page tables: identity map of the first 4 GiB with 2 MiB pages. */
#pragma once

#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

#define PT_PRESENT 0x1ull
#define PT_WRITE   0x2ull
#define PT_PS      0x80ull /* 2 MiB page in a PD entry (SDM Vol. 3A 4.5, Table 4-17) */

/* PML4 at HVPROF_LOW_PML4 (entry 0 -> PDPT), PDPT entries 0-3 -> 4 PDs, PD entry j of PD i maps
 * (i * 512 + j) * 2 MiB, present + writable + PS. Everything else in the six pages is zero.
 * Covers boot.rst's requirement that the kernel's init_size range, the zero page and the
 * command line are identity-mapped, wherever below 4 GiB they lie. */
int pt_identity_write(struct gmem *mem, struct hv_err *err);

/* Entry `index` of the page-table level at `table_gpa`, as pt_identity_write() builds it. */
uint64_t pt_identity_entry(uint64_t table_gpa, unsigned index);
