#include "guestos/linux/kimage.h"

#include <string.h>

const void *lx_kimage_ptr(const struct lx_kimage *k, uint64_t va, uint64_t len)
{
    if (va < LX_START_KERNEL_MAP)
        return NULL;
    uint64_t off = va - LX_START_KERNEL_MAP;
    if (off >= k->image_size || len > k->image_size - off)
        return NULL;
    uint64_t gpa = k->phys_base + off; /* modulo 2^64: phys_base can be "negative" */
    return gmem_ptr(k->mem, gpa, len);
}

const void *lx_kimage_span(const struct lx_kimage *k, uint64_t va, uint64_t *avail)
{
    if (va < LX_START_KERNEL_MAP)
        return NULL;
    uint64_t off = va - LX_START_KERNEL_MAP;
    if (off >= k->image_size)
        return NULL;
    uint64_t gpa = k->phys_base + off;
    uint64_t in_slot;
    const uint8_t *p = gmem_span(k->mem, gpa, &in_slot);
    if (!p)
        return NULL;
    uint64_t in_image = k->image_size - off;
    *avail = in_slot < in_image ? in_slot : in_image;
    return p;
}

bool lx_kimage_read(const struct lx_kimage *k, uint64_t va, void *dst, size_t len)
{
    const void *p = lx_kimage_ptr(k, va, len);
    if (!p)
        return false;
    memcpy(dst, p, len);
    return true;
}
