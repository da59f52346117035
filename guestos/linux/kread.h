/* Reading a Linux guest's kernel virtual memory on the drain thread, through the kernel's own
 * page tables: init_top_pgt (swapper_pg_dir), the top table of every kernel thread, whose kernel
 * half every address space shares (arch/x86/kernel/head_64.S; with PTI it is the kernel copy).
 * VMCOREINFO names it (arch_crash_save_vmcoreinfo), 4- or 5-level as NUMBER(pgtable_l5_enabled)
 * says. A one-page translation cache serves the reads of one call; forget it between calls (the
 * guest runs meanwhile). Upper-half addresses only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestwalk/gmem.h"
#include "guestwalk/paging.h"

struct lx_kernel;

struct lx_kread {
    const struct gmem *mem;
    struct pt_mmu mmu;
    uint64_t cached_page;
    const uint8_t *cached_host;
};

/* From the guest-physical address of the top table (5-level if la57). 0, or -1 with why. */
int lx_kread_init(struct lx_kread *r, const struct gmem *mem, uint64_t root, bool la57, char *why,
                  size_t why_len);

/* From a described kernel's VMCOREINFO. 0, or -1 with why. */
int lx_kread_init_kernel(struct lx_kread *r, const struct lx_kernel *k, const struct gmem *mem,
                         char *why, size_t why_len);

/* Copy len bytes at kernel virtual address va; false if any page is not mapped. */
bool lx_kread(struct lx_kread *r, uint64_t va, void *dst, size_t len);

static inline void lx_kread_forget(struct lx_kread *r)
{
    r->cached_page = UINT64_MAX;
}
