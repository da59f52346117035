#include "guestos/linux/kmodules.h"

#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "guestos/linux/kernel.h"

/* enum module_state, include/linux/module.h (unchanged since 2.6): LIVE, COMING, GOING,
 * UNFORMED. */
#define LX_MODULE_STATE_LIVE 0

static bool member(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t want_size,
                   uint64_t *off)
{
    uint64_t size;
    return sid && lx_btf_member(b, sid, path, off, &size) && (!want_size || size == want_size);
}

/* The MOD_TEXT region: 6.4+ struct module_memory mem[MOD_MEM_NUM_TYPES] (MOD_TEXT is 0), before
 * that struct module_layout core_layout (base, then text_size for the code at its start). */
static bool text_layout(const struct lx_btf *b, uint32_t mod, struct lx_kmod_layout *l)
{
    uint64_t mem, size;
    uint32_t mm = lx_btf_find_struct(b, "module_memory");
    if (mm && lx_btf_member(b, mod, "mem", &mem, &size)) {
        uint64_t base, sz;
        if (!member(b, mm, "base", 8, &base) || !member(b, mm, "size", 4, &sz))
            return false;
        l->text_base = mem + base;
        l->text_size = mem + sz;
        return true;
    }
    return member(b, mod, "core_layout.base", 8, &l->text_base) &&
           member(b, mod, "core_layout.text_size", 4, &l->text_size);
}

int lx_kmods_init_raw(struct lx_kmods *r, const struct gmem *mem, uint64_t head,
                      const struct lx_kmod_layout *lay, uint64_t root, bool la57, char *why,
                      size_t why_len)
{
    memset(r, 0, sizeof(*r));
    r->head = head;
    r->lay = *lay;
    return lx_kread_init(&r->kr, mem, root, la57, why, why_len);
}

int lx_kmods_init(struct lx_kmods *r, const struct lx_kernel *k, const struct gmem *mem, char *why,
                  size_t why_len)
{
    memset(r, 0, sizeof(*r));
    if (!k->sym.modules) {
        snprintf(why, why_len,
                 "no `modules` list in kallsyms (CONFIG_MODULES or "
                 "CONFIG_KALLSYMS_ALL off)");
        return -1;
    }
    const struct lx_btf *b = &k->btf;
    if (!k->btf_types) {
        snprintf(why, why_len, "no BTF to lay out struct module");
        return -1;
    }
    uint32_t mod = lx_btf_find_struct(b, "module");
    uint32_t mks = lx_btf_find_struct(b, "mod_kallsyms");
    struct lx_kmod_layout lay = {0}, *l = &lay;
    if (!member(b, mod, "list", 16, &l->list) || !member(b, mod, "state", 4, &l->state) ||
        !lx_btf_member(b, mod, "name", &l->name, &l->name_size) || l->name_size < 8 ||
        l->name_size > LX_KMOD_NAME_LEN || !text_layout(b, mod, l) ||
        !member(b, mod, "kallsyms", 8, &l->kallsyms)) {
        snprintf(why, why_len,
                 "BTF: struct module lacks list, name, state, its text region or "
                 "kallsyms");
        return -1;
    }
    if (!member(b, mks, "symtab", 8, &l->ks_symtab) ||
        !member(b, mks, "num_symtab", 4, &l->ks_num_symtab) ||
        !member(b, mks, "strtab", 8, &l->ks_strtab)) {
        snprintf(why, why_len, "BTF: no struct mod_kallsyms with symtab, num_symtab, strtab");
        return -1;
    }
    l->orc_known = member(b, mod, "arch.num_orcs", 4, &l->orc_num) &&
                   member(b, mod, "arch.orc_unwind_ip", 8, &l->orc_ip) &&
                   member(b, mod, "arch.orc_unwind", 8, &l->orc);
    if (lx_kread_init_kernel(&r->kr, k, mem, why, why_len) < 0)
        return -1;
    r->head = k->sym.modules;
    r->lay = lay;
    return 0;
}

static bool lx_kmods_read(struct lx_kmods *r, uint64_t va, void *dst, size_t len)
{
    return lx_kread(&r->kr, va, dst, len);
}

static bool read_u64(struct lx_kmods *r, uint64_t va, uint64_t *v)
{
    return lx_kmods_read(r, va, v, sizeof(*v));
}

static bool read_u32(struct lx_kmods *r, uint64_t va, uint32_t *v)
{
    return lx_kmods_read(r, va, v, sizeof(*v));
}

/* A module's name: printable ASCII up to its NUL; anything else is not a module. */
static bool read_name(struct lx_kmods *r, const struct lx_kmod_layout *l, uint64_t mod, char *out)
{
    char raw[LX_KMOD_NAME_LEN];
    if (!lx_kmods_read(r, mod + l->name, raw, l->name_size))
        return false;
    size_t n = 0;
    while (n < l->name_size && raw[n])
        n++;
    if (n == 0 || n == l->name_size)
        return false;
    for (size_t i = 0; i < n; i++)
        if (raw[i] <= ' ' || raw[i] > '~' || raw[i] == '[' || raw[i] == ']')
            return false;
    memcpy(out, raw, n);
    out[n] = 0;
    return true;
}

int lx_kmods_list(struct lx_kmods *r, struct lx_kmod *out, size_t max, struct hv_err *err)
{
    const struct lx_kmod_layout *l = &r->lay;
    lx_kread_forget(&r->kr);
    uint64_t next;
    if (!read_u64(r, r->head, &next))
        return hv_errk(err, HV_ERR_GUEST,
                       "kernel modules: the list head at 0x%" PRIx64 " cannot be read", r->head);
    size_t n = 0;
    for (unsigned steps = 0; next != r->head; steps++) {
        if (steps >= LX_KMODS_MAX)
            return hv_errk(err, HV_ERR_LIMIT,
                           "kernel modules: more than %u list entries (a cycle?)", LX_KMODS_MAX);
        uint64_t entry = next;
        if (!read_u64(r, entry, &next))
            return hv_errk(err, HV_ERR_GUEST,
                           "kernel modules: list entry 0x%" PRIx64 " cannot be read", entry);
        uint64_t mod = entry - l->list;
        uint32_t state;
        struct lx_kmod m = {.addr = mod};
        uint32_t size32 = 0;
        if (!read_u32(r, mod + l->state, &state) || state != LX_MODULE_STATE_LIVE ||
            !read_name(r, l, mod, m.name) || !read_u64(r, mod + l->text_base, &m.text) ||
            !read_u32(r, mod + l->text_size, &size32) ||
            !read_u64(r, mod + l->kallsyms, &m.kallsyms))
            continue; /* coming, going, or not readable now: skipped */
        m.text_size = size32;
        if (m.text < (1ull << 63) || !m.text_size || m.text_size > LX_KMOD_MAX_TEXT ||
            m.text + m.text_size < m.text)
            continue;
        if (n < max)
            out[n++] = m;
    }
    return (int)n;
}

long lx_kmods_symbols(struct lx_kmods *r, const struct lx_kmod *m, lx_kmod_sym_fn fn, void *ctx,
                      struct hv_err *err)
{
    const struct lx_kmod_layout *l = &r->lay;
    lx_kread_forget(&r->kr);
    uint64_t symtab, strtab;
    uint32_t nsym;
    if (!m->kallsyms || !read_u64(r, m->kallsyms + l->ks_symtab, &symtab) ||
        !read_u32(r, m->kallsyms + l->ks_num_symtab, &nsym) ||
        !read_u64(r, m->kallsyms + l->ks_strtab, &strtab))
        return hv_errk(err, HV_ERR_GUEST, "module %s: its symbol table cannot be read", m->name);
    if (nsym > LX_KMOD_MAX_SYMS)
        return hv_errk(err, HV_ERR_GUEST, "module %s: %" PRIu32 " symbols (more than %u)", m->name,
                       nsym, LX_KMOD_MAX_SYMS);
    long given = 0;
    for (uint32_t i = 0; i < nsym; i++) {
        Elf64_Sym s;
        if (!lx_kmods_read(r, symtab + (uint64_t)i * sizeof(s), &s, sizeof(s)))
            return hv_errk(err, HV_ERR_GUEST,
                           "module %s: symbol %" PRIu32 " of %" PRIu32 " cannot be read", m->name,
                           i, nsym);
        unsigned type = ELF64_ST_TYPE(s.st_info);
        if (s.st_shndx == SHN_UNDEF || s.st_name == 0 || type == STT_SECTION || type == STT_FILE ||
            s.st_value < m->text || s.st_value - m->text >= m->text_size)
            continue;
        char name[LX_KMOD_MAX_SYMLEN + 1];
        size_t len = 0;
        bool ok = true;
        /* Page by page, a few bytes at a time: a name ends at its NUL or is cut. */
        while (len < LX_KMOD_MAX_SYMLEN) {
            char c;
            if (!lx_kmods_read(r, strtab + s.st_name + len, &c, 1)) {
                ok = false;
                break;
            }
            if (!c)
                break;
            if (c <= ' ' || c > '~') {
                ok = false;
                break;
            }
            name[len++] = c;
        }
        if (!ok || !len)
            continue;
        char t = ELF64_ST_BIND(s.st_info) == STB_LOCAL ? 't' : 'T';
        given++;
        if (fn(ctx, s.st_value, t, name, len))
            break;
    }
    return given;
}
