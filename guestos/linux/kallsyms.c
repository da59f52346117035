#include "guestos/linux/kallsyms.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NTOKENS         256
#define TOKEN_TABLE_MAX 16384u /* a real token table is 1-3 KiB */

struct tables {
    uint32_t n;
    /* The names stream, read in place: the guest may rewrite it while it is decoded, so each
     * byte is loaded once (volatile) and every length is checked against names_len. */
    const volatile uint8_t *names;
    uint64_t names_len;
    char tokbuf[TOKEN_TABLE_MAX + 1]; /* a stable copy of the token table */
    uint16_t tok_off[NTOKENS], tok_len[NTOKENS];
    bool has_offsets, has_base, has_addresses;
    uint64_t offsets_va, addresses_va, relative_base;
};

const char *lx_kallsyms_mode_name(enum lx_kallsyms_mode m)
{
    switch (m) {
    case LX_KALLSYMS_ABSOLUTE:
        return "absolute";
    case LX_KALLSYMS_RELATIVE:
        return "base-relative";
    case LX_KALLSYMS_ABSOLUTE_PERCPU:
        return "base-relative, absolute per-CPU";
    case LX_KALLSYMS_PLACE_RELATIVE:
        return "place-relative";
    }
    return "?";
}

/* A symbol name holds the nm type letter and identifier characters ([A-Za-z0-9_.$] and a few
 * more in compiler-generated names): printable ASCII without space. */
static bool name_byte_ok(unsigned char c)
{
    return c > 0x20 && c < 0x7f;
}

static int load_tokens(const struct lx_kimage *k, const struct lx_kallsyms_loc *loc,
                       struct tables *t, struct hv_err *err)
{
    uint64_t table_va = loc->token_table, index_va = loc->token_index;
    if (!table_va || !index_va)
        return hv_errk(err, HV_ERR_GUEST, "kallsyms: the token tables are not located");
    uint16_t index[NTOKENS];
    if (!lx_kimage_read(k, index_va, index, sizeof(index)))
        return hv_errk(err, HV_ERR_GUEST,
                       "kallsyms: token index at 0x%" PRIx64 " is not in the kernel image",
                       index_va);
    unsigned max = 0;
    for (unsigned i = 0; i < NTOKENS; i++)
        if (index[i] > max)
            max = index[i];
    uint64_t avail;
    const uint8_t *src = lx_kimage_span(k, table_va, &avail);
    if (!src)
        return hv_errk(err, HV_ERR_GUEST,
                       "kallsyms: token table at 0x%" PRIx64 " is not in the kernel image",
                       table_va);
    uint64_t want = (uint64_t)max + 256; /* the last token and its NUL */
    if (want > TOKEN_TABLE_MAX)
        want = TOKEN_TABLE_MAX;
    if (want > avail)
        want = avail;
    memcpy(t->tokbuf, src, want);
    t->tokbuf[want] = 0;
    for (unsigned i = 0; i < NTOKENS; i++) {
        if (index[i] >= want)
            return hv_errk(err, HV_ERR_GUEST, "kallsyms: token %u starts past the token table", i);
        const char *s = t->tokbuf + index[i];
        size_t len = strnlen(s, (size_t)(want - index[i]));
        if (index[i] + len >= want || len == 0)
            return hv_errk(err, HV_ERR_GUEST, "kallsyms: token %u is empty or not terminated", i);
        for (size_t j = 0; j < len; j++)
            if (!name_byte_ok((unsigned char)s[j]))
                return hv_errk(err, HV_ERR_GUEST, "kallsyms: token %u holds byte 0x%02x", i,
                               (unsigned char)s[j]);
        t->tok_off[i] = index[i];
        t->tok_len[i] = (uint16_t)len;
    }
    return 0;
}

static int load_tables(const struct lx_kimage *k, const struct lx_kallsyms_loc *loc,
                       struct tables *t, struct hv_err *err)
{
    uint64_t num_va = loc->num_syms, names_va = loc->names;
    if (!num_va || !names_va)
        return hv_errk(err, HV_ERR_GUEST,
                       "kallsyms: kallsyms_num_syms and kallsyms_names are not located");
    if (!lx_kimage_u32(k, num_va, &t->n))
        return hv_errk(err, HV_ERR_GUEST,
                       "kallsyms: kallsyms_num_syms at 0x%" PRIx64 " is not in the kernel image",
                       num_va);
    if (t->n == 0 || t->n > LX_KALLSYMS_MAX_SYMS)
        return hv_errk(err, HV_ERR_GUEST, "kallsyms: %" PRIu32 " symbols (1-%u expected)", t->n,
                       LX_KALLSYMS_MAX_SYMS);
    t->names = lx_kimage_span(k, names_va, &t->names_len);
    if (!t->names)
        return hv_errk(err, HV_ERR_GUEST,
                       "kallsyms: kallsyms_names at 0x%" PRIx64 " is not in the kernel image",
                       names_va);
    t->offsets_va = loc->offsets;
    t->addresses_va = loc->addresses;
    t->has_offsets = t->offsets_va && lx_kimage_ptr(k, t->offsets_va, (uint64_t)t->n * 4);
    /* SYMBOL() gives the variable's address. Place-relative offsets (Debian's 7.x) need no
     * base, and VMCOREINFO then names none. */
    t->has_base = t->has_offsets && loc->relative_base &&
                  lx_kimage_u64(k, loc->relative_base, &t->relative_base);
    t->has_addresses = t->addresses_va && lx_kimage_ptr(k, t->addresses_va, (uint64_t)t->n * 8);
    if (!t->has_offsets && !t->has_addresses)
        return hv_errk(err, HV_ERR_GUEST,
                       "kallsyms: neither kallsyms_offsets nor kallsyms_addresses can be "
                       "read");
    return load_tokens(k, loc, t, err);
}

/* Decode the name at *pos into buf (type letter first, NUL-terminated, truncated to
 * LX_KSYM_NAME_MAX + 1 bytes). False when the stream ends inside it. */
static bool next_name(const struct tables *t, uint64_t *pos, char *buf, size_t *out_len)
{
    uint64_t p = *pos;
    if (p >= t->names_len)
        return false;
    unsigned len = t->names[p++];
    if (len & 0x80) { /* ULEB128, two bytes at most (6.1+, names over 127 tokens) */
        if (p >= t->names_len)
            return false;
        len = (len & 0x7f) | ((unsigned)t->names[p++] << 7);
    }
    if (len == 0 || len > t->names_len - p)
        return false;
    size_t n = 0;
    for (unsigned i = 0; i < len; i++) {
        uint8_t tok = t->names[p + i];
        size_t tl = t->tok_len[tok];
        if (n + tl > LX_KSYM_NAME_MAX + 1)
            tl = LX_KSYM_NAME_MAX + 1 - n;
        memcpy(buf + n, t->tokbuf + t->tok_off[tok], tl);
        n += tl;
    }
    buf[n] = 0;
    *pos = p + len;
    *out_len = n;
    return true;
}

static bool address_of(const struct lx_kimage *k, const struct tables *t, enum lx_kallsyms_mode m,
                       uint32_t i, uint64_t *addr)
{
    if (m == LX_KALLSYMS_ABSOLUTE)
        return lx_kimage_u64(k, t->addresses_va + (uint64_t)i * 8, addr);
    int32_t off;
    if (!lx_kimage_read(k, t->offsets_va + (uint64_t)i * 4, &off, sizeof(off)))
        return false;
    switch (m) {
    case LX_KALLSYMS_RELATIVE:
        *addr = t->relative_base + (uint32_t)off;
        return true;
    case LX_KALLSYMS_ABSOLUTE_PERCPU:
        *addr = off >= 0 ? (uint64_t)off : t->relative_base - 1 - (uint64_t)(int64_t)off;
        return true;
    case LX_KALLSYMS_PLACE_RELATIVE:
        *addr = t->offsets_va + (uint64_t)i * 4 + (uint64_t)(int64_t)off;
        return true;
    default:
        return false;
    }
}

int lx_kallsyms_decode(const struct lx_kimage *k, const struct lx_kallsyms_loc *loc, uint64_t stext,
                       lx_ksym_fn fn, void *ctx, struct lx_kallsyms_info *info, struct hv_err *err)
{
    struct tables *t = calloc(1, sizeof(*t));
    if (!t)
        return hv_errk(err, HV_ERR_NO_MEMORY, "kallsyms: out of memory");
    int rc = -1;
    char name[LX_KSYM_NAME_MAX + 2];
    size_t len;
    if (load_tables(k, loc, t, err) < 0)
        goto out;

    /* Pass 1: where _stext is, which picks the address mode. */
    uint64_t pos = 0, expanded = 0;
    uint32_t stext_index = UINT32_MAX;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!next_name(t, &pos, name, &len)) {
            hv_errk(err, HV_ERR_GUEST,
                    "kallsyms: the names stream ends at symbol %" PRIu32 " of %" PRIu32, i, t->n);
            goto out;
        }
        expanded += len;
        if (expanded > LX_KALLSYMS_MAX_NAME_BYTES) {
            hv_errk(err, HV_ERR_GUEST,
                    "kallsyms: %" PRIu32 " names expand to more than %u MiB by symbol %" PRIu32
                    " (a distribution kernel's: ~5 MiB); not read",
                    t->n, LX_KALLSYMS_MAX_NAME_BYTES >> 20, i);
            goto out;
        }
        if (stext_index == UINT32_MAX && !strcmp(name + 1, "_stext"))
            stext_index = i;
    }
    if (stext_index == UINT32_MAX) {
        hv_errk(err, HV_ERR_GUEST, "kallsyms: no symbol _stext in %" PRIu32 " symbols", t->n);
        goto out;
    }
    static const enum lx_kallsyms_mode modes[] = {LX_KALLSYMS_ABSOLUTE_PERCPU, LX_KALLSYMS_RELATIVE,
                                                  LX_KALLSYMS_PLACE_RELATIVE, LX_KALLSYMS_ABSOLUTE};
    bool found = false;
    enum lx_kallsyms_mode mode = LX_KALLSYMS_ABSOLUTE;
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]) && !found; m++) {
        bool usable = modes[m] == LX_KALLSYMS_ABSOLUTE         ? t->has_addresses
                      : modes[m] == LX_KALLSYMS_PLACE_RELATIVE ? t->has_offsets
                                                               : t->has_base;
        if (!usable)
            continue;
        uint64_t a;
        if (address_of(k, t, modes[m], stext_index, &a) && a == stext) {
            mode = modes[m];
            found = true;
        }
    }
    if (!found) {
        hv_errk(err, HV_ERR_GUEST,
                "kallsyms: no address mode maps _stext (symbol %" PRIu32 ") to 0x%" PRIx64,
                stext_index, stext);
        goto out;
    }

    /* Pass 2: every symbol to the caller. */
    pos = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        uint64_t a;
        if (!next_name(t, &pos, name, &len) || !address_of(k, t, mode, i, &a)) {
            hv_errk(err, HV_ERR_GUEST, "kallsyms: symbol %" PRIu32 " changed while it was read", i);
            goto out;
        }
        if (len < 2)
            continue; /* a type letter without a name */
        if (fn(ctx, a, name[0], name + 1, len - 1, err) < 0)
            goto out;
    }
    if (info)
        *info = (struct lx_kallsyms_info){.nsyms = t->n, .mode = mode, .stext = stext};
    rc = 0;
out:
    free(t);
    return rc;
}
