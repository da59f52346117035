/* libFuzzer: a user module's image in hostile guest memory, as discovery reads it: the input is
 * the memory at 0x400000 (an ELF image laid out as mapped, in the seeds); its headers, dynamic
 * section, soname and dynamic symbol table are parsed, and the link map its DT_DEBUG points at
 * (anywhere in the input) is followed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "guestos/generic/elf_dynamic.h"
#include "guestos/generic/link_map.h"
#include "guestos/module.h"

#define BASE 0x400000ull

struct flat {
    const uint8_t *b;
    uint64_t len;
};

static bool flat_read(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct flat *f = ctx;
    if (va < BASE || va - BASE > f->len || len > f->len - (va - BASE))
        return false;
    memcpy(dst, f->b + (va - BASE), len);
    return true;
}

static int on_symbol(void *ctx, uint64_t addr, uint64_t size, char type, const char *name,
                     size_t len)
{
    (void)addr;
    (void)size;
    (void)type;
    volatile size_t *sum = ctx;
    for (size_t i = 0; i < len; i++) /* touch every byte given */
        *sum += (unsigned char)name[i];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct flat f = {data, size};
    struct discover_module m;
    if (discover_elf_at(flat_read, &f, BASE, &m, NULL) != 0)
        return 0;
    struct elf_dynamic d;
    if (elf_dynamic_read(flat_read, &f, &m, &d)) {
        char name[DISCOVER_NAME_MAX];
        elf_dynamic_string(flat_read, &f, &m, &d, d.soname, name, sizeof(name));
        volatile size_t sum = 0;
        elf_dynamic_symbols(flat_read, &f, &m, &d, on_symbol, (void *)&sum);
    }
    if (m.r_debug) {
        static struct link_map_entry e[LINK_MAP_MAX];
        bool consistent;
        link_map_read(flat_read, &f, m.r_debug, e, LINK_MAP_MAX, &consistent);
    }
    /* The whole discovery over the image's first page as an executable range. */
    struct discover_module out[4];
    struct discover_range r = {BASE, BASE + 4096};
    discover_modules(flat_read, &f, &r, 1, out, 4);
    return 0;
}
