#include "guestos/linux/orc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bit fields after sp_offset and bp_offset (orc_types.h, little-endian bitfield order):
 *   <= 6.2:  sp_reg:4 bp_reg:4 type:2 end:1 unused:5
 *      6.3:  sp_reg:4 bp_reg:4 type:2 signal:1 end:1 unused:4
 *   >= 6.5:  sp_reg:4 bp_reg:4 type:3 signal:1 unused:4 */
static void layout_le62(struct lx_orc_layout *l)
{
    *l = (struct lx_orc_layout){.sp_reg = 0,
                                .bp_reg = 4,
                                .type = 8,
                                .type_bits = 2,
                                .end = 10,
                                .signal = -1,
                                .old_types = true};
}
static void layout_63(struct lx_orc_layout *l)
{
    *l = (struct lx_orc_layout){.sp_reg = 0,
                                .bp_reg = 4,
                                .type = 8,
                                .type_bits = 2,
                                .end = 11,
                                .signal = 10,
                                .old_types = true};
}
static void layout_65(struct lx_orc_layout *l)
{
    *l = (struct lx_orc_layout){.sp_reg = 0,
                                .bp_reg = 4,
                                .type = 8,
                                .type_bits = 3,
                                .end = -1,
                                .signal = 11,
                                .old_types = false};
}

static bool field(const struct lx_btf *b, uint32_t sid, const char *name, unsigned want_bits,
                  int8_t *pos)
{
    uint64_t off;
    uint32_t bits;
    if (!lx_btf_bitfield(b, sid, name, &off, &bits))
        return false;
    /* The fields follow the two s16 offsets and stay within one 16-bit word. */
    if (bits != want_bits || off < 32 || off + bits > 48)
        return false;
    *pos = (int8_t)(off - 32);
    return true;
}

bool lx_orc_layout_from_btf(const struct lx_btf *b, struct lx_orc_layout *out, char *why,
                            size_t why_len)
{
    uint32_t sid = lx_btf_find_struct(b, "orc_entry");
    if (!sid) {
        snprintf(why, why_len, "BTF has no struct orc_entry");
        return false;
    }
    struct lx_orc_layout l = {.end = -1, .signal = -1};
    uint64_t off, size;
    if (!lx_btf_member(b, sid, "sp_offset", &off, &size) || off != 0 || size != 2 ||
        !lx_btf_member(b, sid, "bp_offset", &off, &size) || off != 2 || size != 2 ||
        !lx_btf_type_size(b, sid, &size) || size != LX_ORC_ENTRY_SIZE ||
        !field(b, sid, "sp_reg", 4, &l.sp_reg) || !field(b, sid, "bp_reg", 4, &l.bp_reg)) {
        snprintf(why, why_len,
                 "BTF struct orc_entry is not 6 bytes of s16 sp_offset, bp_offset, "
                 "sp_reg:4, bp_reg:4");
        return false;
    }
    bool has_end = field(b, sid, "end", 1, &l.end);
    field(b, sid, "signal", 1, &l.signal);
    if (field(b, sid, "type", 2, &l.type) && has_end) {
        l.type_bits = 2;
        l.old_types = true;
    } else if (field(b, sid, "type", 3, &l.type) && !has_end) {
        l.type_bits = 3;
    } else {
        snprintf(why, why_len, "BTF struct orc_entry: an unknown arrangement of type and end");
        return false;
    }
    snprintf(
        l.how, sizeof(l.how), "BTF struct orc_entry: type %d bits at %d, %s%s%s", l.type_bits,
        l.type, l.old_types ? "end at " : "no end", l.old_types ? (l.end == 10 ? "10" : "11") : "",
        l.signal >= 0 ? (l.signal == 10 ? ", signal at 10" : ", signal at 11") : ", no signal");
    *out = l;
    return true;
}

bool lx_orc_layout_from_release(const char *release, struct lx_orc_layout *out, char *why,
                                size_t why_len)
{
    unsigned major, minor;
    if (sscanf(release, "%u.%u", &major, &minor) != 2) {
        snprintf(why, why_len, "release \"%.64s\" does not start with a version", release);
        return false;
    }
    unsigned v = major * 1000 + minor;
    if (v < 4014) {
        snprintf(why, why_len, "Linux %u.%u predates ORC (4.14)", major, minor);
        return false;
    }
    if (v <= 6002)
        layout_le62(out);
    else if (v == 6003)
        layout_63(out);
    else if (v >= 6005)
        layout_65(out);
    else {
        snprintf(why, why_len, "Linux %u.%u: ORC's layout cannot be told without BTF", major,
                 minor);
        return false;
    }
    snprintf(out->how, sizeof(out->how), "the layout of Linux %s",
             v <= 6002   ? "4.14-6.2"
             : v == 6003 ? "6.3"
                         : "6.5+");
    return true;
}

static unsigned bits_at(unsigned word, int pos, int n)
{
    return pos < 0 ? 0 : (word >> pos) & ((1u << n) - 1);
}

/* The guest's register number -> hvprof's (enum lx_orc_reg). */
static uint8_t reg_of(enum lx_orc_regs regs, unsigned raw)
{
    enum { I = LX_ORC_REG_INVALID };
    static const uint8_t six[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, I, I, I, I, I, I};
    static const uint8_t seven[16] = {LX_ORC_REG_UNDEFINED, LX_ORC_REG_AX,      LX_ORC_REG_DX,
                                      LX_ORC_REG_SP,        LX_ORC_REG_BP,      LX_ORC_REG_DI,
                                      LX_ORC_REG_R10,       LX_ORC_REG_R13,     LX_ORC_REG_PREV_SP,
                                      LX_ORC_REG_SP_INDIRECT, LX_ORC_REG_BP_INDIRECT, I, I, I, I,
                                      I};
    return (regs == LX_ORC_REGS_7 ? seven : six)[raw & 15];
}

struct lx_orc_entry lx_orc_decode(const struct lx_orc_layout *l, const uint8_t raw[6])
{
    struct lx_orc_entry e = {
        .sp_offset = (int16_t)(raw[0] | raw[1] << 8),
        .bp_offset = (int16_t)(raw[2] | raw[3] << 8),
    };
    unsigned w = raw[4] | raw[5] << 8;
    e.sp_reg = reg_of(l->regs, bits_at(w, l->sp_reg, 4));
    e.bp_reg = reg_of(l->regs, bits_at(w, l->bp_reg, 4));
    unsigned type = bits_at(w, l->type, l->type_bits);
    if (!l->old_types) {
        e.type = type <= LX_ORC_TYPE_REGS_PARTIAL ? (uint8_t)type : LX_ORC_TYPE_UNDEFINED;
        e.signal = (uint8_t)bits_at(w, l->signal, 1);
        return e;
    }
    /* UNWIND_HINT_TYPE_CALL 0, REGS 1, REGS_PARTIAL 2 (include/linux/objtool.h); an undefined
     * sp_reg is the end of the stack with `end`, else no information. */
    if (e.sp_reg == LX_ORC_REG_UNDEFINED)
        e.type = bits_at(w, l->end, 1) ? LX_ORC_TYPE_END_OF_STACK : LX_ORC_TYPE_UNDEFINED;
    else
        e.type = type == 0   ? LX_ORC_TYPE_CALL
                 : type == 1 ? LX_ORC_TYPE_REGS
                 : type == 2 ? LX_ORC_TYPE_REGS_PARTIAL
                             : LX_ORC_TYPE_UNDEFINED;
    /* Before 6.3 the unwinder itself took the IP after a regs frame as exact. */
    e.signal = l->signal >= 0 ? (uint8_t)bits_at(w, l->signal, 1)
                              : (e.type == LX_ORC_TYPE_REGS || e.type == LX_ORC_TYPE_REGS_PARTIAL);
    return e;
}

/* A field value no kernel writes: the entry is counted as bad (and unwinds stop at it). */
static bool plausible(const struct lx_orc_entry *e)
{
    if (e->type == LX_ORC_TYPE_UNDEFINED || e->type == LX_ORC_TYPE_END_OF_STACK)
        return true;
    if (e->sp_reg == LX_ORC_REG_UNDEFINED || e->sp_reg == LX_ORC_REG_PREV_SP ||
        e->sp_reg > LX_ORC_REG_AX)
        return false;
    return e->bp_reg == LX_ORC_REG_UNDEFINED || e->bp_reg == LX_ORC_REG_PREV_SP ||
           e->bp_reg == LX_ORC_REG_BP;
}

struct ip_index {
    uint64_t ip;
    uint32_t i;
};

static int by_ip(const void *a, const void *b)
{
    const struct ip_index *x = a, *y = b;
    if (x->ip != y->ip)
        return x->ip < y->ip ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i; /* stable: terminators stay before real entries */
}

void lx_orc_table_free(struct lx_orc_table *t)
{
    free(t->ip);
    free(t->e);
    free(t->block);
    *t = (struct lx_orc_table){0};
}

int lx_orc_table_build(struct lx_orc_table *t, const int32_t *ip_rel, uint64_t ip_va,
                       const uint8_t *raw, size_t n, const struct lx_orc_layout *l, uint64_t lo_ok,
                       uint64_t hi_ok, char *why, size_t why_len)
{
    *t = (struct lx_orc_table){0};
    if (n == 0 || n > LX_ORC_MAX_ENTRIES) {
        snprintf(why, why_len, "%zu ORC entries (at most %u)", n, LX_ORC_MAX_ENTRIES);
        return -1;
    }
    struct ip_index *x = malloc(n * sizeof(*x));
    if (!x) {
        snprintf(why, why_len, "out of memory for %zu ORC entries", n);
        return -1;
    }
    size_t m = 0;
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        uint64_t ip = ip_va + 4 * (uint64_t)i + (uint64_t)(int64_t)ip_rel[i];
        if (ip < lo_ok || ip >= hi_ok)
            continue;
        sorted &= m == 0 || x[m - 1].ip <= ip;
        x[m++] = (struct ip_index){ip, (uint32_t)i};
    }
    if (!sorted) /* scripts/sorttable sorts at build time; a forged table need not be */
        qsort(x, m, sizeof(*x), by_ip);
    if (m == 0 || x[m - 1].ip - x[0].ip >= LX_ORC_MAX_SPAN) {
        snprintf(why, why_len,
                 m ? "ORC IPs span more than 1 GiB" : "no ORC IP lies in the kernel's code");
        free(x);
        return -1;
    }
    t->lo = x[0].ip;
    t->hi = x[m - 1].ip + 1;
    t->n = m;
    t->nblocks = ((t->hi - t->lo) >> LX_ORC_BLOCK_SHIFT) + 1;
    t->ip = malloc(m * sizeof(*t->ip));
    t->e = malloc(m * sizeof(*t->e));
    t->block = malloc((t->nblocks + 1) * sizeof(*t->block));
    if (!t->ip || !t->e || !t->block) {
        free(x);
        lx_orc_table_free(t);
        snprintf(why, why_len, "out of memory for %zu ORC entries", m);
        return -1;
    }
    for (size_t i = 0; i < m; i++) {
        t->ip[i] = (uint32_t)(x[i].ip - t->lo);
        t->e[i] = lx_orc_decode(l, raw + (size_t)x[i].i * LX_ORC_ENTRY_SIZE);
        t->undefined += t->e[i].type == LX_ORC_TYPE_UNDEFINED;
        t->bad += !plausible(&t->e[i]);
    }
    free(x);
    size_t i = 0;
    for (size_t b = 0; b <= t->nblocks; b++) {
        uint64_t start = (uint64_t)b << LX_ORC_BLOCK_SHIFT;
        while (i < m && t->ip[i] < start)
            i++;
        t->block[b] = (uint32_t)i;
    }
    return 0;
}

const struct lx_orc_entry *lx_orc_find(const struct lx_orc_table *t, uint64_t ip)
{
    if (!t->n || ip < t->lo || ip >= t->hi)
        return NULL;
    uint64_t off = ip - t->lo;
    size_t b = off >> LX_ORC_BLOCK_SHIFT;
    /* The last entry below the block starts at or below ip; the entries below the next block
     * end the range (block[] counts entries below each block's start). */
    size_t lo = t->block[b] ? t->block[b] - 1 : 0, hi = t->block[b + 1] - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (t->ip[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    return &t->e[lo];
}
