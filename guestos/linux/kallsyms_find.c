#include "guestos/linux/kallsyms_find.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/linux/kallsyms.h"

#define NTOKENS       256
#define TOKEN_LEN_MAX 256   /* a real token is 1-20 characters */
#define TABLE_MAX     16384 /* a real token table is 1-3 KiB */
/* A block of 256 names takes at least 2 bytes a name (a length, one token) and at most a
 * two-byte length and LX_KSYM_NAME_MAX tokens a name. */
#define BLOCK_MIN   512u
#define BLOCK_MAX   (256u * (2u + LX_KSYM_NAME_MAX))
#define MARKERS_MAX (LX_KALLSYMS_MAX_SYMS / 256)

bool lx_kallsyms_loc_from_vmcoreinfo(const struct lx_vmcoreinfo *v, struct lx_kallsyms_loc *loc)
{
    *loc = (struct lx_kallsyms_loc){0};
    bool named = lx_vmcoreinfo_symbol(v, "kallsyms_num_syms", &loc->num_syms);
    named |= lx_vmcoreinfo_symbol(v, "kallsyms_names", &loc->names);
    named |= lx_vmcoreinfo_symbol(v, "kallsyms_token_table", &loc->token_table);
    named |= lx_vmcoreinfo_symbol(v, "kallsyms_token_index", &loc->token_index);
    (void)lx_vmcoreinfo_symbol(v, "kallsyms_offsets", &loc->offsets);
    (void)lx_vmcoreinfo_symbol(v, "kallsyms_relative_base", &loc->relative_base);
    (void)lx_vmcoreinfo_symbol(v, "kallsyms_addresses", &loc->addresses);
    return named;
}

static bool token_byte_ok(uint8_t c)
{
    return c > 0x20 && c < 0x7f;
}

/* The search's bounds: a guest can plant the digit run and marker-like arrays anywhere, so the
 * candidates tried and the bytes examined for them are counted, and the search gives up past
 * either bound with a message (the real tables are found at the first candidate on every kernel
 * measured). */
#define SEARCH_CANDIDATES 4096u          /* digit runs checked as token tables */
#define SEARCH_WORK       (256ull << 20) /* bytes read or parsed for the candidates */

struct search {
    const struct lx_kimage *k;
    uint32_t *markers;                          /* MARKERS_MAX */
    uint8_t table[TABLE_MAX + 8 + 2 * NTOKENS]; /* a stable copy of a candidate token table */
    uint64_t work;                              /* bytes left */
    unsigned candidates;
    bool gave_up;
};

static bool charge(struct search *x, uint64_t bytes)
{
    if (bytes > x->work) {
        x->work = 0;
        x->gave_up = true;
        return false;
    }
    x->work -= bytes;
    return true;
}

/* `hit` holds "0\0" ... "9\0": if it is token 0x30 of a token table, find the table's start
 * and index. The table's end is found by walking its last 208 strings; the index follows at the
 * next 8-byte boundary and says where token 0x30 lies from the start. Every one of the 256
 * strings is then checked against the index. */
static bool token_table_at(struct search *x, uint64_t hit, uint64_t *table, uint64_t *index)
{
    uint64_t avail;
    const uint8_t *src = lx_kimage_span(x->k, hit, &avail);
    if (!src || !charge(x, 2 * TABLE_MAX))
        return false;
    /* A stable copy of what follows the hit: the rest of the table, then the index. */
    uint8_t *buf = x->table;
    uint64_t len = avail < sizeof(x->table) ? avail : sizeof(x->table);
    memcpy(buf, src, len);
    uint64_t p = 0;
    for (unsigned i = '0'; i < NTOKENS; i++) {
        uint64_t n = 0;
        while (p + n < len && buf[p + n] != 0) {
            if (!token_byte_ok(buf[p + n]) || ++n > TOKEN_LEN_MAX)
                return false;
        }
        if (n == 0 || p + n >= len)
            return false;
        p += n + 1;
    }
    uint64_t index_va = (hit + p + 7) & ~7ull;
    uint16_t idx[NTOKENS];
    if (!lx_kimage_read(x->k, index_va, idx, sizeof(idx)) || idx[0] != 0 || idx['0'] > hit ||
        idx['0'] >= TABLE_MAX)
        return false;
    uint64_t start = hit - idx['0'], size = hit + p - start;
    if (size > TABLE_MAX || !lx_kimage_read(x->k, start, buf, size))
        return false;
    uint64_t off = 0;
    for (unsigned i = 0; i < NTOKENS; i++) {
        if (idx[i] != off)
            return false;
        uint64_t n = 0;
        while (off + n < size && buf[off + n] != 0)
            if (!token_byte_ok(buf[off + n++]))
                return false;
        if (n == 0 || off + n >= size)
            return false;
        off += n + 1;
    }
    if (off != size)
        return false;
    *table = start;
    *index = index_va;
    return true;
}

/* The names at `names` (n of them, n read at num_syms) end where the markers start, and name
 * 256*i begins where marker i says. */
static bool names_fit(struct search *x, uint64_t num_syms, uint64_t names, uint64_t markers_va,
                      uint32_t nmarkers)
{
    uint32_t n;
    if (!lx_kimage_u32(x->k, num_syms, &n) || n == 0 || (n + 255) / 256 != nmarkers)
        return false;
    uint64_t avail;
    const volatile uint8_t *s = lx_kimage_span(x->k, names, &avail);
    uint64_t limit = markers_va - names;
    if (!s || avail < limit || !charge(x, limit))
        return false;
    uint64_t pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i % 256 == 0 && pos != x->markers[i / 256])
            return false;
        if (pos >= limit)
            return false;
        unsigned len = s[pos++];
        if (len & 0x80) {
            if (pos >= limit)
                return false;
            len = (len & 0x7f) | ((unsigned)s[pos++] << 7);
        }
        if (len == 0 || len > limit - pos)
            return false;
        pos += len;
    }
    return markers_va - (names + pos) < 8; /* the markers start at the next 4- or 8-byte boundary */
}

/* Markers starting at P: 0, then steps a block of names can take. Their count, or 0. */
static uint32_t markers_at(struct search *x, uint64_t p, uint64_t table)
{
    uint32_t m = 0, prev = 0;
    while (m < MARKERS_MAX && p + 4ull * (m + 1) <= table) {
        uint32_t v;
        if (!lx_kimage_u32(x->k, p + 4ull * m, &v))
            break;
        if (m == 0 ? v != 0 : (v - prev < BLOCK_MIN || v - prev > BLOCK_MAX || v < prev))
            break;
        x->markers[m++] = prev = v;
    }
    return charge(x, 4ull * m) ? m : 0;
}

/* Before a token table: the markers, and before them the count and the names that agree. */
static bool names_before(struct search *x, uint64_t table, uint64_t index,
                         struct lx_kallsyms_loc *loc)
{
    const struct lx_kimage *k = x->k;
    uint64_t lowest = table - LX_START_KERNEL_MAP > LX_KALLSYMS_MARKERS_WINDOW
                          ? table - LX_KALLSYMS_MARKERS_WINDOW
                          : LX_START_KERNEL_MAP;
    /* The markers start with a 0, at a 4-byte boundary (8 before 7.x). */
    for (uint64_t p = (table & ~3ull) - 4; p >= lowest && p > LX_START_KERNEL_MAP + 16; p -= 4) {
        uint32_t v;
        if (!charge(x, 4))
            return false;
        if (!lx_kimage_u32(k, p, &v) || v != 0)
            continue;
        uint32_t m = markers_at(x, p, table);
        if (m < 2)
            continue;
        /* The names end at p, and their last block takes at most BLOCK_MAX bytes after
         * markers[m - 1]: the names start in that window, at a 4-byte boundary, right after
         * num_syms (7.x) or at the 8-byte boundary after it (5.x, 6.x). */
        uint64_t hi = p - x->markers[m - 1];
        if (hi > p || hi < LX_START_KERNEL_MAP + 16)
            continue;
        uint64_t lo =
            hi - LX_START_KERNEL_MAP > BLOCK_MAX + 16 ? hi - BLOCK_MAX : LX_START_KERNEL_MAP + 16;
        for (uint64_t s = hi & ~3ull; s >= lo; s -= 4) {
            uint64_t num = s - 4;
            if (!charge(x, 8))
                return false;
            if (!names_fit(x, num, s, p, m)) {
                uint32_t pad;
                num = s - 8;
                if ((s & 7) || !lx_kimage_u32(k, s - 4, &pad) || pad != 0 ||
                    !names_fit(x, num, s, p, m))
                    continue;
            }
            uint32_t n;
            (void)lx_kimage_u32(k, num, &n);
            uint64_t offsets_size = ((uint64_t)n * 4 + 7) & ~7ull, base;
            *loc = (struct lx_kallsyms_loc){
                .num_syms = num,
                .names = s,
                .markers = p,
                .token_table = table,
                .token_index = index,
                .relative_base = (num & ~7ull) - 8,
                .offsets = (num & ~7ull) - 8 - offsets_size,
                .addresses = (num & ~7ull) - (uint64_t)n * 8,
                .by_structure = true,
            };
            /* 5.x and 6.1 put the offsets and relative_base before num_syms; 6.12 and 7.x put
             * them after the token index. relative_base holds a kernel address. */
            if (!lx_kimage_u64(k, loc->relative_base, &base) || base < LX_START_KERNEL_MAP) {
                loc->offsets = index + ((NTOKENS * 2 + 7) & ~7ull);
                loc->relative_base = loc->offsets + offsets_size;
            }
            return true;
        }
        if (x->gave_up)
            return false;
    }
    return false;
}

int lx_kallsyms_find(const struct lx_kimage *k, uint64_t from, uint64_t to,
                     struct lx_kallsyms_loc *loc, struct hv_err *err)
{
    /* clang-format off */
    static const char digits[] = "0\0" "1\0" "2\0" "3\0" "4\0" "5\0" "6\0" "7\0" "8\0" "9";
    /* clang-format on */
    const size_t plen = sizeof(digits); /* with the final NUL */
    *loc = (struct lx_kallsyms_loc){0};
    struct search x = {.k = k, .work = SEARCH_WORK};
    x.markers = malloc(MARKERS_MAX * sizeof(*x.markers));
    if (!x.markers)
        return hv_errk(err, HV_ERR_NO_MEMORY, "kallsyms: out of memory");
    unsigned tables = 0;
    uint64_t last_table = 0, va = from;
    int rc = -1;
    while (va < to && !x.gave_up) {
        uint64_t avail;
        const uint8_t *p = lx_kimage_span(k, va, &avail);
        if (!p) { /* not RAM or not the image: the next page may be */
            va = (va | 0xfff) + 1;
            continue;
        }
        if (avail > to - va)
            avail = to - va;
        const uint8_t *s = p, *end = p + avail;
        while ((size_t)(end - s) >= plen && !x.gave_up) {
            const uint8_t *h = memmem(s, (size_t)(end - s), digits, plen);
            if (!h)
                break;
            s = h + 1;
            if (++x.candidates > SEARCH_CANDIDATES) {
                x.gave_up = true;
                break;
            }
            uint64_t table, index;
            if (!token_table_at(&x, va + (uint64_t)(h - p), &table, &index))
                continue;
            tables++;
            last_table = table;
            if (names_before(&x, table, index, loc)) {
                rc = 0;
                goto out;
            }
        }
        va += avail;
    }
    if (x.gave_up)
        hv_errk(err, HV_ERR_GUEST,
                "kallsyms: VMCOREINFO does not name the tables (it does from Linux 6.0 on), and "
                "the search for them gave up after %u candidates and %" PRIu64
                " MiB examined (decoys in guest memory?)",
                x.candidates, (uint64_t)((SEARCH_WORK - x.work) >> 20));
    else if (!tables)
        hv_errk(err, HV_ERR_GUEST,
                "kallsyms: VMCOREINFO does not name the tables (it does from Linux 6.0 on) and "
                "there is no token table in the image's 0x%" PRIx64 "-0x%" PRIx64,
                from, to);
    else
        hv_errk(err, HV_ERR_GUEST,
                "kallsyms: a token table at 0x%" PRIx64 ", but no names and markers before it "
                "that agree",
                last_table);
out:
    free(x.markers);
    return rc;
}
