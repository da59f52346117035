/* A small direct-mapped translation cache: 4 KiB virtual page -> host pointer.
 *
 * It is valid only while the vCPU stays stopped: the guest may rewrite its page tables as soon as
 * it runs, so gw_tlb_flush() must be called at every exit before the first lookup. Flushing is a
 * generation bump (O(1)); entries of an older generation never hit. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "guestwalk/paging.h"

#define GW_TLB_ENTRIES 64 /* power of two; a 128-frame walk touches a handful of stack pages */

struct gw_tlb_entry {
    uint64_t va_page; /* va >> 12 */
    uint64_t gpa;     /* guest-physical address of the 4 KiB page */
    uint8_t *host;    /* host pointer of the 4 KiB page (whole page inside one gmem slot) */
    uint32_t gen;     /* valid iff == gw_tlb.gen */
    uint8_t user_ok;  /* translation allowed a user-mode access */
};

/* Bytes of a stack copied at an exit, standing in for guest memory when the stack is walked
 * later (sampler/exit/stack_copy.h): [lo, hi) reads from `bytes`; the rest of [deny_lo, deny_hi)
 * (the stack's window around the copy, which has changed since) is not present; every other
 * address (code, other data) is read from the guest as usual. */
struct gw_tlb_pin {
    uint64_t lo, hi;
    uint64_t deny_lo, deny_hi;
    const uint8_t *bytes;
};

struct gw_tlb {
    struct gw_tlb_entry e[GW_TLB_ENTRIES];
    uint32_t gen;                 /* never 0 after gw_tlb_init, so zeroed entries are invalid */
    uint64_t hits, misses;        /* statistics for benchmarks and tests */
    const struct gw_tlb_pin *pin; /* NULL but while walking a copied stack */
};

void gw_tlb_init(struct gw_tlb *t);
void gw_tlb_flush(struct gw_tlb *t);

/* Host pointer for `va` and the number of bytes readable from it up to the end of its 4 KiB page
 * (or of its gmem slot, if the page straddles a slot end). Translates through `mmu` on a miss,
 * using the KPTI fallback root for upper-half addresses when the primary root fails. `gpa` (may
 * be NULL) receives the guest-physical address of va. Returns NULL with *fault set on failure. */
const uint8_t *gw_tlb_map(struct gw_tlb *t, const struct pt_mmu *mmu, const struct gmem *mem,
                          uint64_t va, unsigned access, size_t *avail, uint64_t *gpa,
                          struct pt_fault *fault);
