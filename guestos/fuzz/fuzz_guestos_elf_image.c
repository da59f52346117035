/* libFuzzer: the in-memory ELF parser of module discovery on hostile guest memory. The input
 * is the guest's memory at 0x400000; one executable range inside it is scanned. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "guestos/module.h"

struct flat {
    const uint8_t *b;
    uint64_t base, len;
};

static bool flat_read(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct flat *f = ctx;
    if (va < f->base || va - f->base > f->len || len > f->len - (va - f->base))
        return false;
    memcpy(dst, f->b + (va - f->base), len);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct flat f = {data, 0x400000, size};
    struct discover_module m[2];
    struct discover_range r[2] = {{0x400000, 0x400000 + size}, {0x401000, 0x402000}};
    discover_modules(flat_read, &f, r, 2, m, 2);
    return 0;
}
