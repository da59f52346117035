#include "guestos/generic/user_modules.h"

#include "guestos/generic/elf_dynamic.h"

#include <stdlib.h>
#include <string.h>

struct collect {
    struct discover_range *r;
    size_t n;
};

static int on_mapping(void *ctx, const struct pt_mapping *m)
{
    struct collect *c = ctx;
    /* Executable user pages only (XD is only meaningful with EFER.NXE; pt reports nx = false
     * without it, so then every user page counts). */
    if (!m->user || m->nx || !m->in_ram)
        return 0;
    uint64_t end = m->va + m->page_size;
    if (c->n && c->r[c->n - 1].end == m->va) {
        c->r[c->n - 1].end = end;
        return 0;
    }
    if (c->n == DISCOVER_GUEST_MAX_RANGES)
        return 1;
    c->r[c->n++] = (struct discover_range){m->va, end};
    return 0;
}

struct reader {
    const struct gmem *mem;
    const struct pt_mmu *mmu;
};

/* Page by page through the guest's translation, as user-mode reads (what the program itself
 * could read), so kernel-only pages never leak into module parsing. */
bool discover_guest_read(const struct gmem *mem, const struct pt_mmu *mmu, uint64_t va, void *dst,
                         size_t len)
{
    uint8_t *out = dst;
    while (len) {
        struct pt_xlate x;
        if (pt_translate(mmu, mem, va, PT_ACC_USER, &x, NULL) < 0)
            return false;
        size_t chunk = 4096 - (va & 4095);
        if (chunk > len)
            chunk = len;
        if (!gmem_read(mem, x.gpa, out, chunk))
            return false;
        out += chunk;
        va += chunk;
        len -= chunk;
    }
    return true;
}

static bool read_virt(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct reader *r = ctx;
    return discover_guest_read(r->mem, r->mmu, va, dst, len);
}

size_t discover_guest_ranges(const struct gmem *mem, const struct pt_mmu *mmu,
                             struct discover_range *out, int *iter_result)
{
    struct collect c = {out, 0};
    uint64_t last = mmu->va_bits == 57 ? 0x00ffffffffffffffull : 0x00007fffffffffffull;
    int res =
        (int)pt_for_each_mapping(mmu, mem, 0, last, DISCOVER_GUEST_MAX_ENTRIES, on_mapping, &c);
    if (iter_result)
        *iter_result = res;
    return c.n;
}

size_t discover_guest_modules_in(const struct gmem *mem, const struct pt_mmu *mmu,
                                 const struct discover_range *ranges, size_t nranges,
                                 struct discover_module *out, size_t max)
{
    struct reader rd = {mem, mmu};
    return discover_modules(read_virt, &rd, ranges, nranges, out, max);
}

size_t discover_guest_modules(const struct gmem *mem, const struct pt_mmu *mmu,
                              struct discover_module *out, size_t max,
                              struct discover_guest_stats *st)
{
    struct discover_range *r = malloc(DISCOVER_GUEST_MAX_RANGES * sizeof(*r));
    if (!r)
        return 0;
    int res;
    size_t nr = discover_guest_ranges(mem, mmu, r, &res);
    size_t n = discover_guest_modules_in(mem, mmu, r, nr, out, max);
    if (st) {
        st->ranges = nr;
        st->iter_result = res;
    }
    free(r);
    return n;
}

struct relay {
    guestos_symbol_fn fn;
    void *ctx;
};

static int relay_symbol(void *ctx, uint64_t addr, uint64_t size, char type, const char *name,
                        size_t len)
{
    const struct relay *r = ctx;
    struct guestos_symbol g = {
        .addr = addr, .name = name, .name_len = (uint16_t)len, .type = type, .size = size};
    return r->fn(r->ctx, &g);
}

long discover_guest_symbols(const struct gmem *mem, const struct pt_mmu *mmu,
                            const struct discover_module *m, guestos_symbol_fn fn, void *ctx)
{
    struct reader r = {mem, mmu};
    struct elf_dynamic d;
    if (!elf_dynamic_read(read_virt, &r, m, &d))
        return -1;
    struct relay rl = {fn, ctx};
    return elf_dynamic_symbols(read_virt, &r, m, &d, relay_symbol, &rl);
}

struct wanted_objects {
    const char *const *names;
    size_t n, found;
    uint64_t *addrs;
};

static int match_object(void *ctx, uint64_t addr, uint64_t size, char type, const char *name,
                        size_t len)
{
    (void)size;
    (void)type;
    struct wanted_objects *w = ctx;
    for (size_t i = 0; i < w->n; i++)
        if (!w->addrs[i] && strlen(w->names[i]) == len && !memcmp(w->names[i], name, len)) {
            w->addrs[i] = addr;
            w->found++;
        }
    return w->found == w->n; /* all found: stop */
}

size_t discover_guest_objects(const struct gmem *mem, const struct pt_mmu *mmu,
                              const struct discover_module *m, const char *const *names, size_t n,
                              uint64_t *addrs)
{
    struct reader r = {mem, mmu};
    struct elf_dynamic d;
    for (size_t i = 0; i < n; i++)
        addrs[i] = 0;
    if (!elf_dynamic_read(read_virt, &r, m, &d))
        return 0;
    struct wanted_objects w = {names, n, 0, addrs};
    (void)elf_dynamic_objects(read_virt, &r, m, &d, match_object, &w);
    return w.found;
}
