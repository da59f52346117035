#include "guestos/generic/elf_dynamic.h"

#include <elf.h>
#include <string.h>

#define SYM_BATCH    128  /* Elf64_Sym read at a time */
#define BUCKET_BATCH 1024 /* hash buckets read at a time */

/* A d_ptr as a run-time address inside the image, or 0 (see the header). */
static uint64_t image_ptr(const struct discover_module *m, uint64_t p)
{
    if (p >= m->start && p < m->end)
        return p;
    if (p <= UINT64_MAX - m->bias && p + m->bias >= m->start && p + m->bias < m->end)
        return p + m->bias;
    return 0;
}

/* [va, va + len) inside the image. */
static bool in_image(const struct discover_module *m, uint64_t va, uint64_t len)
{
    return va >= m->start && va <= m->end && len <= m->end - va;
}

bool elf_dynamic_read(discover_read_fn read, void *ctx, const struct discover_module *m,
                      struct elf_dynamic *d)
{
    memset(d, 0, sizeof(*d));
    d->soname = UINT64_MAX;
    if (!m->dynamic || !in_image(m, m->dynamic, sizeof(Elf64_Dyn)))
        return false;
    uint64_t n = m->dynamic_size / sizeof(Elf64_Dyn);
    if (n > DYN_MAX_ENTRIES)
        n = DYN_MAX_ENTRIES;
    Elf64_Dyn batch[32];
    for (uint64_t i = 0; i < n;) {
        uint64_t k = n - i < 32 ? n - i : 32;
        uint64_t va = m->dynamic + i * sizeof(Elf64_Dyn);
        if (!in_image(m, va, k * sizeof(Elf64_Dyn)) || !read(ctx, va, batch, k * sizeof(Elf64_Dyn)))
            return i > 0;
        for (uint64_t j = 0; j < k; j++, i++) {
            const Elf64_Dyn *e = &batch[j];
            switch (e->d_tag) {
            case DT_NULL:
                return true;
            case DT_SYMTAB:
                d->symtab = image_ptr(m, e->d_un.d_ptr);
                break;
            case DT_STRTAB:
                d->strtab = image_ptr(m, e->d_un.d_ptr);
                break;
            case DT_STRSZ:
                d->strsz = e->d_un.d_val;
                break;
            case DT_GNU_HASH:
                d->gnu_hash = image_ptr(m, e->d_un.d_ptr);
                break;
            case DT_HASH:
                d->hash = image_ptr(m, e->d_un.d_ptr);
                break;
            case DT_SONAME:
                d->soname = e->d_un.d_val;
                break;
            case DT_DEBUG:
                d->has_debug = true;
                d->debug = e->d_un.d_ptr;
                break;
            default:
                break;
            }
        }
    }
    return true;
}

static bool printable(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return len > 0;
}

/* The string at `off` of the table, its length in *len (<= max); false if it cannot be read
 * or does not end within max bytes. Reads a page-bounded chunk at a time. */
static bool read_str(discover_read_fn read, void *ctx, const struct discover_module *m,
                     const struct elf_dynamic *d, uint64_t off, char *out, size_t max, size_t *len)
{
    if (!d->strtab || (d->strsz && off >= d->strsz) || off > m->end - d->strtab)
        return false;
    uint64_t va = d->strtab + off;
    size_t got = 0;
    while (got <= max) {
        size_t chunk = 4096 - ((va + got) & 4095);
        if (chunk > max + 1 - got)
            chunk = max + 1 - got;
        if (!in_image(m, va + got, chunk) || !read(ctx, va + got, out + got, chunk)) {
            /* The string may end before the unreadable part: try byte by byte. */
            while (got <= max && in_image(m, va + got, 1) && read(ctx, va + got, out + got, 1)) {
                if (!out[got]) {
                    *len = got;
                    return true;
                }
                got++;
            }
            return false;
        }
        void *nul = memchr(out + got, 0, chunk);
        if (nul) {
            *len = (size_t)((char *)nul - out);
            return true;
        }
        got += chunk;
    }
    return false;
}

bool elf_dynamic_string(discover_read_fn read, void *ctx, const struct discover_module *m,
                        const struct elf_dynamic *d, uint64_t off, char *out, size_t len)
{
    size_t n;
    if (len < 2 || !read_str(read, ctx, m, d, off, out, len - 1, &n) || !printable(out, n))
        return false;
    out[n] = 0;
    return true;
}

/* The number of symbols DT_GNU_HASH covers: past the highest bucket's chain end (the table
 * lists symbols from symoffset on, each chain ends with bit 0 set). */
static bool gnu_hash_count(discover_read_fn read, void *ctx, const struct discover_module *m,
                           uint64_t va, uint64_t *count)
{
    uint32_t h[4]; /* nbuckets, symoffset, bloom_size (in words of 8), bloom_shift */
    if (!in_image(m, va, sizeof(h)) || !read(ctx, va, h, sizeof(h)))
        return false;
    if (h[0] == 0 || h[0] > DYN_MAX_BUCKETS || h[1] > DYN_MAX_SYMS || h[2] > DYN_MAX_BUCKETS)
        return false;
    uint64_t buckets = va + sizeof(h) + 8ull * h[2];
    if (!in_image(m, buckets, 4ull * h[0]))
        return false;
    uint32_t top = 0, batch[BUCKET_BATCH];
    for (uint32_t i = 0; i < h[0];) {
        uint32_t k = h[0] - i < BUCKET_BATCH ? h[0] - i : BUCKET_BATCH;
        if (!read(ctx, buckets + 4ull * i, batch, 4ull * k))
            return false;
        for (uint32_t j = 0; j < k; j++)
            if (batch[j] > top)
                top = batch[j];
        i += k;
    }
    if (top < h[1]) {
        *count = h[1];
        return true;
    }
    uint64_t chain = buckets + 4ull * h[0];
    for (uint64_t i = top; i < DYN_MAX_SYMS; i++) {
        uint32_t c;
        uint64_t at = chain + 4 * (i - h[1]);
        if (!in_image(m, at, 4) || !read(ctx, at, &c, 4))
            return false;
        if (c & 1) {
            *count = i + 1;
            return true;
        }
    }
    return false;
}

static bool symbol_count(discover_read_fn read, void *ctx, const struct discover_module *m,
                         const struct elf_dynamic *d, uint64_t *count)
{
    if (d->gnu_hash && gnu_hash_count(read, ctx, m, d->gnu_hash, count))
        return true;
    uint32_t h[2]; /* nbucket, nchain: nchain is the number of symbols (gABI) */
    if (d->hash && in_image(m, d->hash, sizeof(h)) && read(ctx, d->hash, h, sizeof(h)) &&
        h[1] <= DYN_MAX_SYMS) {
        *count = h[1];
        return true;
    }
    return false;
}

static char type_letter(unsigned bind)
{
    return bind == STB_WEAK ? 'W' : bind == STB_LOCAL ? 't' : 'T';
}

/* The defined symbols of the table whose type `wanted` accepts, in table order. */
static long each_symbol(discover_read_fn read, void *ctx, const struct discover_module *m,
                        const struct elf_dynamic *d, bool (*wanted)(unsigned type),
                        elf_dynsym_fn fn, void *fn_ctx)
{
    uint64_t count;
    if (!d->symtab || !d->strtab || !symbol_count(read, ctx, m, d, &count))
        return -1;
    if (count > DYN_MAX_SYMS)
        count = DYN_MAX_SYMS;
    long given = 0;
    Elf64_Sym batch[SYM_BATCH];
    char name[DYN_MAX_NAME + 1];
    for (uint64_t i = 0; i < count;) {
        uint64_t k = count - i < SYM_BATCH ? count - i : SYM_BATCH;
        uint64_t va = d->symtab + i * sizeof(Elf64_Sym);
        if (!in_image(m, va, k * sizeof(Elf64_Sym)) || !read(ctx, va, batch, k * sizeof(Elf64_Sym)))
            return given; /* the rest is not mapped (or not the table): keep what was read */
        for (uint64_t j = 0; j < k; j++, i++) {
            const Elf64_Sym *s = &batch[j];
            unsigned type = ELF64_ST_TYPE(s->st_info);
            if (!wanted(type) || s->st_shndx == SHN_UNDEF || s->st_value == 0 || s->st_name == 0)
                continue;
            size_t len;
            /* A name longer than the bound is cut there (still a useful name). */
            if (!read_str(read, ctx, m, d, s->st_name, name, DYN_MAX_NAME, &len)) {
                if (!in_image(m, d->strtab + s->st_name, DYN_MAX_NAME) ||
                    !read(ctx, d->strtab + s->st_name, name, DYN_MAX_NAME))
                    continue;
                len = DYN_MAX_NAME;
            }
            if (!printable(name, len))
                continue;
            given++;
            if (fn(fn_ctx, s->st_value, s->st_size, type_letter(ELF64_ST_BIND(s->st_info)), name,
                   len))
                return given;
        }
    }
    return given;
}

static bool is_function(unsigned type)
{
    return type == STT_FUNC || type == STT_GNU_IFUNC;
}

static bool is_object(unsigned type)
{
    return type == STT_OBJECT;
}

long elf_dynamic_symbols(discover_read_fn read, void *ctx, const struct discover_module *m,
                         const struct elf_dynamic *d, elf_dynsym_fn fn, void *fn_ctx)
{
    return each_symbol(read, ctx, m, d, is_function, fn, fn_ctx);
}

long elf_dynamic_objects(discover_read_fn read, void *ctx, const struct discover_module *m,
                         const struct elf_dynamic *d, elf_dynsym_fn fn, void *fn_ctx)
{
    return each_symbol(read, ctx, m, d, is_object, fn, fn_ctx);
}
