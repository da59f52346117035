/* The per-vCPU guest walker: everything a stack walk needs, allocated once before sampling.
 *
 *   struct gw_walker w;
 *   gw_walker_init(&w, &vm->mem, NULL, &err);        // once per vCPU thread: opens capstone
 *   ...at every sampling exit, on the vCPU thread:
 *   gw_walker_begin(&w, &snap);                      // flush cache, derive MMU mode
 *   struct gw_stack st = GW_STACK_INIT(pcs, 128);
 *   gw_unwind(&w, &st);                              // see unwind.h
 *   gw_walker_fini(&w);
 *
 * gw_walker_begin/gw_unwind/gw_read_virt do no allocation, take no locks and make no system
 * calls. A walker is used by one thread at a time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"
#include "guestwalk/frameless.h"
#include "guestwalk/leaf.h"
#include "guestwalk/paging.h"
#include "guestwalk/snapshot.h"
#include "guestwalk/tlb.h"

#define GW_DEFAULT_MAX_DEPTH    128
#define GW_DEFAULT_STACK_WINDOW (8ull << 20)   /* frames must lie within RSP .. RSP + 8 MiB */
#define GW_DEFAULT_MAX_FRAME    (256ull << 10) /* one frame at most 256 KiB (async-profiler) */
#define GW_READ_VIRT_MAX        (64u << 10)    /* bound of one gw_read_virt call */

struct gw_config {
    unsigned max_depth;    /* frames including frame 0; 0 = GW_DEFAULT_MAX_DEPTH */
    uint64_t stack_window; /* 0 = GW_DEFAULT_STACK_WINDOW */
    uint64_t max_frame;    /* 0 = GW_DEFAULT_MAX_FRAME */
    unsigned phys_bits;    /* guest MAXPHYADDR, 0 = 52 */
    bool no_leaf_repair;   /* disable leaf-frame repair */
};

struct gw_cfi_map; /* guestwalk/cfi_unwind.h */

struct gw_walker {
    const struct gmem *mem;
    struct gw_config cfg; /* defaults filled in */
    struct gw_leaf_decoder dec;
    struct pt_mmu mmu;
    struct gw_tlb tlb;
    struct gw_snapshot snap;      /* state given to the last gw_walker_begin */
    struct gw_shape_cache shapes; /* frameless-scan answers, kept across stops */
    /* The DWARF CFI tables of the address space being walked (guestwalk/cfi_unwind.h), set by
     * the caller after gw_walker_begin (which clears it); NULL: none. */
    const struct gw_cfi_map *cfi;
};

/* `cfg` may be NULL for defaults. Fails only if capstone cannot be opened. */
int gw_walker_init(struct gw_walker *w, const struct gmem *mem, const struct gw_config *cfg,
                   struct hv_err *err);
void gw_walker_fini(struct gw_walker *w);

/* Start a new stop of the vCPU: invalidate the translation cache and derive the MMU mode.
 * Returns PT_OK, or PT_NOT_LONG_MODE (w->mmu.mode_why says why; gw_unwind then reports
 * GW_STOP_UNSUPPORTED_MODE). */
enum pt_fault_reason gw_walker_begin(struct gw_walker *w, const struct gw_snapshot *snap);

/* Translate through the cache. `user` selects a user-mode access (U/S checked at every level).
 * Returns 0 and *gpa, or -1 with *fault. */
int gw_translate(struct gw_walker *w, uint64_t va, bool user, uint64_t *gpa,
                 struct pt_fault *fault);

/* Copy len (<= GW_READ_VIRT_MAX) bytes at guest-virtual va, across pages. Returns 0, or -1 with
 * *fault describing the first byte that could not be read (buf contents then unspecified).
 * `fault` may be NULL. */
int gw_read_virt(struct gw_walker *w, uint64_t va, void *buf, size_t len, bool user,
                 struct pt_fault *fault);
