/* Reading the Linux kernel image from guest-physical memory without the guest's page tables.
 *
 * On x86-64 the kernel image is mapped linearly at __START_KERNEL_map (0xffffffff80000000):
 * virt = phys - phys_base + __START_KERNEL_map, for KERNEL_IMAGE_SIZE bytes (1 GiB with KASLR),
 * where phys_base is where the image really lies (arch/x86/include/asm/page_64.h,
 * __phys_addr_nodebug; VMCOREINFO gives NUMBER(phys_base) and NUMBER(KERNEL_IMAGE_SIZE)). Every
 * table the Linux layer needs (kallsyms, BTF, the per-CPU offsets) lives in that image, so a
 * bounded reader of it is enough; the image is physically contiguous, so a range that lies in
 * one RAM slot can be read in place. docs/linux-introspection.md. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestwalk/gmem.h"

#define LX_START_KERNEL_MAP 0xffffffff80000000ull
#define LX_KERNEL_IMAGE_MAX (1ull << 30) /* KERNEL_IMAGE_SIZE with RANDOMIZE_BASE */

struct lx_kimage {
    const struct gmem *mem;
    uint64_t phys_base;  /* added modulo 2^64: "negative" when the virtual slide is larger */
    uint64_t image_size; /* bytes mapped from LX_START_KERNEL_MAP, <= LX_KERNEL_IMAGE_MAX */
};

/* Host pointer to [va, va+len) of the image, or NULL if any of it is outside the image mapping
 * or outside guest RAM. The bytes belong to a running guest: they can change under the caller. */
const void *lx_kimage_ptr(const struct lx_kimage *k, uint64_t va, uint64_t len);

/* Host pointer to va and, in *avail, how many bytes from it can be read in place (to the end of
 * the image mapping or of the RAM slot, whichever comes first); NULL if va cannot be read. */
const void *lx_kimage_span(const struct lx_kimage *k, uint64_t va, uint64_t *avail);

/* Copy len bytes at va; false if lx_kimage_ptr() would fail. */
bool lx_kimage_read(const struct lx_kimage *k, uint64_t va, void *dst, size_t len);

static inline bool lx_kimage_u64(const struct lx_kimage *k, uint64_t va, uint64_t *out)
{
    return lx_kimage_read(k, va, out, sizeof(*out));
}
static inline bool lx_kimage_u32(const struct lx_kimage *k, uint64_t va, uint32_t *out)
{
    return lx_kimage_read(k, va, out, sizeof(*out));
}
