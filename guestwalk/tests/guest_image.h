/* Synthetic guest memory images for guestwalk tests, fuzz seeds and the benchmark: a host buffer
 * as guest RAM (two slots around a hole that stands in for MMIO) with x86-64 page tables built
 * in it, 4- or 5-level. Not on any hot path; allocation here is fine. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "guestwalk/gmem.h"
#include "guestwalk/walker.h"

/* Guest-physical layout. */
#define GIMG_RAM0_GPA  0x0ull
#define GIMG_RAM0_SIZE (16ull << 20)  /* [0, 16 MiB) */
#define GIMG_HOLE_GPA  GIMG_RAM0_SIZE /* [16 MiB, 32 MiB): "MMIO", no slot */
#define GIMG_RAM1_GPA  (32ull << 20)  /* [32 MiB, 40 MiB) */
#define GIMG_RAM1_SIZE (8ull << 20)
#define GIMG_PAST_RAM  (GIMG_RAM1_GPA + GIMG_RAM1_SIZE) /* first GPA past all RAM */

/* Entry flags (SDM Vol. 3A Table 4-19). */
#define GIMG_P       (1ull << 0)
#define GIMG_RW      (1ull << 1)
#define GIMG_US      (1ull << 2)
#define GIMG_PS      (1ull << 7)
#define GIMG_XD      (1ull << 63)
#define GIMG_USER_RW (GIMG_P | GIMG_RW | GIMG_US)
#define GIMG_KERN_RW (GIMG_P | GIMG_RW)

struct gimg {
    struct gmem mem;
    uint8_t *ram0, *ram1;
    uint64_t next_page; /* bump allocator in ram0 */
    uint64_t ram1_next; /* bump allocator in ram1 */
    bool la57;
    uint64_t root; /* GPA of the top-level table */
};

/* Returns 0, or -1 if allocation failed. */
int gimg_init(struct gimg *g, bool la57);
void gimg_free(struct gimg *g);

/* A zeroed 4 KiB page in RAM slot 0 (or slot 1 with gimg_alloc_page1); GPA, 0 when full. */
uint64_t gimg_alloc_page(struct gimg *g);
uint64_t gimg_alloc_page1(struct gimg *g);
/* A zeroed top-level table, for a second address space (e.g. the KPTI pair). */
uint64_t gimg_new_root(struct gimg *g);

/* Host pointer for a GPA inside RAM, NULL otherwise. */
void *gimg_host(struct gimg *g, uint64_t gpa);

/* Map one page (4 KiB, 2 MiB or 1 GiB) of `root`'s address space: va -> gpa with leaf `flags`
 * (PS added for large pages). Missing intermediate tables are created with P|RW|US. Returns a
 * pointer to the leaf entry, NULL if a table could not be allocated or a large page is in the
 * way. */
uint64_t *gimg_map_in(struct gimg *g, uint64_t root, uint64_t va, uint64_t gpa, uint64_t size,
                      uint64_t flags);
uint64_t *gimg_map(struct gimg *g, uint64_t va, uint64_t gpa, uint64_t size, uint64_t flags);

/* Pointer to the entry that maps va at `level` (5..1) in the default root, NULL if the walk
 * does not reach that level. */
uint64_t *gimg_entry(struct gimg *g, uint64_t va, unsigned level);

/* Map [va, va+len) with fresh 4 KiB pages (page-aligned va). Returns 0 or -1. */
int gimg_map_fresh(struct gimg *g, uint64_t va, uint64_t len, uint64_t flags);

/* Write/read through the image's own page tables (supervisor access). Returns 0 or -1. */
int gimg_write(struct gimg *g, uint64_t va, const void *src, uint64_t len);
int gimg_write_u64(struct gimg *g, uint64_t va, uint64_t v);

/* Control registers for a long-mode vCPU using the default root (LA57 if the image is). */
struct gw_snapshot gimg_cpu(const struct gimg *g, uint64_t rip, uint64_t rsp, uint64_t rbp,
                            uint8_t cpl);

/* Build a frame-pointer chain of `n` records upwards from `fp0` (8-aligned), `gap` bytes apart
 * (>= 16): record i holds [next fp, ret[i]]; the last record's next fp is 0. */
int gimg_write_chain(struct gimg *g, uint64_t fp0, unsigned n, uint64_t gap, const uint64_t *ret);
