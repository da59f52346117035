/* libFuzzer: the kernel's module list and a module's symbol table read from a hostile guest's
 * memory. The input is guest RAM from guest-physical 0, the kernel's page tables included (the
 * top table is its first page), so the guest controls every translation, the list links, each
 * struct module and its mod_kallsyms; the layout is fixed (as BTF would give it). Every read
 * must stay bounded, and what comes out must be a sane module: a printable name, a code region
 * in the kernel half within the bound, symbols inside it with printable names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ram.h"
#include "guestos/linux/kmodules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD 0xffffffffc0000000ull

static const struct lx_kmod_layout lay = {.list = 0x8,
                                          .name = 0x18,
                                          .name_size = 56,
                                          .state = 0x0,
                                          .text_base = 0x140,
                                          .text_size = 0x148,
                                          .kallsyms = 0x200,
                                          .ks_symtab = 0x0,
                                          .ks_num_symtab = 0x8,
                                          .ks_strtab = 0x10};

struct sym_check {
    const struct lx_kmod *m;
    unsigned n;
};

static int on_sym(void *ctx, uint64_t addr, char type, const char *name, size_t len)
{
    struct sym_check *c = ctx;
    if (addr < c->m->text || addr - c->m->text >= c->m->text_size || (type != 't' && type != 'T') ||
        len == 0 || len > LX_KMOD_MAX_SYMLEN)
        abort();
    for (size_t i = 0; i < len; i++)
        if (name[i] <= ' ' || name[i] > '~')
            abort();
    return ++c->n >= 4096; /* enough: bound the time per input */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gmem mem;
    uint8_t *ram = fuzz_ram(data, size, 1u << 20, 0, &mem);
    if (!ram)
        return 0;
    struct lx_kmods r;
    char why[160];
    if (lx_kmods_init_raw(&r, &mem, HEAD, &lay, 0, false, why, sizeof(why)) < 0)
        abort();
    struct lx_kmod m[8];
    struct hv_err err;
    int n = lx_kmods_list(&r, m, 8, &err);
    for (int i = 0; i < n; i++) {
        size_t len = strnlen(m[i].name, sizeof(m[i].name));
        if (len == 0 || len >= sizeof(m[i].name) || m[i].text < (1ull << 63) || !m[i].text_size ||
            m[i].text_size > LX_KMOD_MAX_TEXT)
            abort();
        struct sym_check c = {&m[i], 0};
        (void)lx_kmods_symbols(&r, &m[i], on_sym, &c, &err);
    }
    free(ram);
    return 0;
}
