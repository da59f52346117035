/* Guest-physical memory map: the only way hvprof code turns a guest-physical address into a host
 * pointer. The VMM registers one slot per KVM memory slot; everything that is not inside a slot
 * (MMIO holes, addresses past RAM) has no host pointer, so a hostile guest page table or stack
 * can never make the profiler read outside guest RAM. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define GMEM_MAX_SLOTS 8

struct gmem_slot {
    uint64_t gpa;  /* first guest-physical byte */
    uint64_t size; /* bytes */
    uint8_t *host; /* host mapping of gpa */
};

struct gmem {
    struct gmem_slot slot[GMEM_MAX_SLOTS]; /* sorted by gpa, non-overlapping */
    unsigned nslots;
};

void gmem_init(struct gmem *m);

/* Register [gpa, gpa+size) backed by `host`. Fails on overlap, wrap-around or too many slots. */
int gmem_add(struct gmem *m, uint64_t gpa, uint64_t size, void *host, struct hv_err *err);

/* Host pointer for [gpa, gpa+len) when the whole range lies inside one slot, else NULL.
 * len == 0 is treated as 1. Constant time for the handful of slots a VM has. */
static inline void *gmem_ptr(const struct gmem *m, uint64_t gpa, uint64_t len)
{
    if (len == 0)
        len = 1;
    for (unsigned i = 0; i < m->nslots; i++) {
        const struct gmem_slot *s = &m->slot[i];
        if (gpa >= s->gpa && gpa - s->gpa < s->size && len <= s->size - (gpa - s->gpa))
            return s->host + (gpa - s->gpa);
    }
    return NULL;
}

/* Host pointer for gpa and, in *avail, how many bytes from it lie inside the same slot; NULL if
 * gpa is outside RAM. */
static inline void *gmem_span(const struct gmem *m, uint64_t gpa, uint64_t *avail)
{
    for (unsigned i = 0; i < m->nslots; i++) {
        const struct gmem_slot *s = &m->slot[i];
        if (gpa >= s->gpa && gpa - s->gpa < s->size) {
            *avail = s->size - (gpa - s->gpa);
            return s->host + (gpa - s->gpa);
        }
    }
    return NULL;
}

/* Copy `len` bytes starting at gpa, possibly spanning slots that touch. Returns false (and copies
 * nothing useful) if any byte is outside RAM. */
bool gmem_read(const struct gmem *m, uint64_t gpa, void *dst, size_t len);

/* Total bytes of RAM registered. */
uint64_t gmem_ram_bytes(const struct gmem *m);
