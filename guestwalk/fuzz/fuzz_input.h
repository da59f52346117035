/* Input layout shared by the guestwalk fuzz targets and their seed generator:
 *
 *   struct gw_fuzz_regs (little-endian, 96 bytes) | guest memory image
 *
 * The image is split into two RAM slots around a hole, like a VM with an MMIO gap: bytes
 * [0, split) at GPA 0 and bytes [split, len) at GW_FUZZ_SLOT1_GPA, where split = split_num pages
 * (split_num 0, or split beyond the image: one slot). Everything else (page tables, stacks, code,
 * register values) comes from the input unmodified. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestwalk/gmem.h"

#define GW_FUZZ_SLOT1_GPA 0x100000ull /* 1 MiB: the hole is [split, 1 MiB) */
#define GW_FUZZ_MAX_IMAGE (GW_FUZZ_SLOT1_GPA)

struct gw_fuzz_regs {
    uint64_t rip, rsp, rbp;
    uint64_t cr0, cr3, cr4, efer, kernel_cr3;
    uint64_t va, va_len; /* extra address range for translate / read / iterate */
    uint8_t cpl, phys_bits, split_num, flags;
    uint8_t pad[12];
};

_Static_assert(sizeof(struct gw_fuzz_regs) == 96, "fuzz input header layout");

/* Parse `data` into regs and a gmem over a private copy of the image (freed by the caller with
 * free(*image)). Returns -1 if the input is too short or the image too large. */
static inline int gw_fuzz_parse(const uint8_t *data, size_t size, struct gw_fuzz_regs *regs,
                                struct gmem *mem, uint8_t **image)
{
    if (size < sizeof(*regs))
        return -1;
    memcpy(regs, data, sizeof(*regs));
    size_t len = size - sizeof(*regs);
    if (len > GW_FUZZ_MAX_IMAGE)
        return -1;
    *image = malloc(len ? len : 1);
    if (!*image)
        return -1;
    memcpy(*image, data + sizeof(*regs), len);
    gmem_init(mem);
    size_t split = regs->split_num ? (size_t)regs->split_num * 4096 : len;
    if (split > len)
        split = len;
    if (split > 0)
        gmem_add(mem, 0, split, *image, NULL);
    if (len > split)
        gmem_add(mem, GW_FUZZ_SLOT1_GPA, len - split, *image + split, NULL);
    return 0;
}
