/* Guest RAM for the guestos fuzz targets: the input, page-rounded, as one RAM slot at `gpa`.
 * The buffer is exactly the RAM (calloc'd to its size), so ASan sees any read past it. */
#pragma once

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestwalk/gmem.h"

/* Returns the buffer to free, or NULL when the input is empty or over `max` bytes. */
static inline uint8_t *fuzz_ram(const uint8_t *data, size_t size, size_t max, uint64_t gpa,
                                struct gmem *mem)
{
    size_t len = (size + 4095) & ~(size_t)4095;
    if (len == 0 || len > max)
        return NULL;
    uint8_t *ram = calloc(1, len);
    if (!ram)
        return NULL;
    memcpy(ram, data, size);
    gmem_init(mem);
    if (gmem_add(mem, gpa, len, ram, NULL) < 0) {
        free(ram);
        return NULL;
    }
    return ram;
}
