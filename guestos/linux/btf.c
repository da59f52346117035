#include "guestos/linux/btf.h"

#include <stdlib.h>
#include <string.h>

#include "common/vector.h"

/* include/uapi/linux/btf.h */
#define BTF_MAGIC      0xeb9f
#define BTF_HDR_MIN    24
#define TYPE_HDR       12 /* struct btf_type: name_off, info, size/type */
#define MAX_TYPES      (4u << 20)
#define MAX_DEPTH      8  /* anonymous members nested in one another */
#define MAX_CHAIN      32 /* typedef/modifier chain */
#define MAX_PATH_PARTS 4

enum {
    KIND_INT = 1,
    KIND_PTR = 2,
    KIND_ARRAY = 3,
    KIND_STRUCT = 4,
    KIND_UNION = 5,
    KIND_ENUM = 6,
    KIND_FWD = 7,
    KIND_TYPEDEF = 8,
    KIND_VOLATILE = 9,
    KIND_CONST = 10,
    KIND_RESTRICT = 11,
    KIND_FUNC = 12,
    KIND_FUNC_PROTO = 13,
    KIND_VAR = 14,
    KIND_DATASEC = 15,
    KIND_FLOAT = 16,
    KIND_DECL_TAG = 17,
    KIND_TYPE_TAG = 18,
    KIND_ENUM64 = 19,
};

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static unsigned kind_of(uint32_t info)
{
    return (info >> 24) & 0x1f;
}
static unsigned vlen_of(uint32_t info)
{
    return info & 0xffff;
}
static bool kflag_of(uint32_t info)
{
    return info >> 31;
}

/* Bytes following the 12-byte header of a type of this kind (btf.rst, "Type encoding"); -1 for
 * an unknown kind. */
static int64_t extra_bytes(unsigned kind, unsigned vlen)
{
    switch (kind) {
    case KIND_INT:
    case KIND_VAR:
    case KIND_DECL_TAG:
        return 4;
    case KIND_PTR:
    case KIND_FWD:
    case KIND_TYPEDEF:
    case KIND_VOLATILE:
    case KIND_CONST:
    case KIND_RESTRICT:
    case KIND_FUNC:
    case KIND_FLOAT:
    case KIND_TYPE_TAG:
        return 0;
    case KIND_ARRAY:
        return 12;
    case KIND_STRUCT:
    case KIND_UNION:
    case KIND_DATASEC:
    case KIND_ENUM64:
        return 12 * (int64_t)vlen;
    case KIND_ENUM:
    case KIND_FUNC_PROTO:
        return 8 * (int64_t)vlen;
    default:
        return -1;
    }
}

void lx_btf_free(struct lx_btf *b)
{
    free(b->data);
    free(b->type_off);
    memset(b, 0, sizeof(*b));
}

int lx_btf_load(struct lx_btf *b, const void *data, size_t len, struct hv_err *err)
{
    memset(b, 0, sizeof(*b));
    if (len < BTF_HDR_MIN || len > LX_BTF_MAX_BYTES)
        return hv_errk(err, HV_ERR_GUEST, "btf: %zu bytes", len);
    b->data = malloc(len);
    if (!b->data)
        return hv_errk(err, HV_ERR_NO_MEMORY, "btf: out of memory");
    memcpy(b->data, data, len);
    b->len = len;
    const uint8_t *d = b->data;
    uint16_t magic;
    memcpy(&magic, d, 2);
    uint32_t hdr_len = rd32(d + 4);
    if (magic != BTF_MAGIC || d[2] != 1)
        goto bad_header;
    if (hdr_len < BTF_HDR_MIN || hdr_len > len)
        goto bad_header;
    uint32_t type_off = rd32(d + 8), type_len = rd32(d + 12);
    uint32_t str_off = rd32(d + 16), str_len = rd32(d + 20);
    size_t body = len - hdr_len;
    if (type_off > body || type_len > body - type_off || str_off > body ||
        str_len > body - str_off || str_len == 0)
        goto bad_header;
    b->types = d + hdr_len + type_off;
    b->types_len = type_len;
    b->strs = (const char *)d + hdr_len + str_off;
    b->strs_len = str_len;
    if (b->strs[str_len - 1] != 0 || b->strs[0] != 0) {
        lx_btf_free(b);
        return hv_errk(err, HV_ERR_GUEST, "btf: the string section is not NUL-delimited");
    }

    /* Index every type: ids count from 1 in section order. */
    size_t cap = 1024;
    b->type_off = malloc(cap * sizeof(*b->type_off));
    if (!b->type_off) {
        lx_btf_free(b);
        return hv_errk(err, HV_ERR_NO_MEMORY, "btf: out of memory");
    }
    uint32_t n = 0;
    for (uint64_t off = 0; off < type_len;) {
        if (type_len - off < TYPE_HDR) {
            lx_btf_free(b);
            return hv_errk(err, HV_ERR_GUEST,
                           "btf: type %u is cut off by the end of the type section", n + 1);
        }
        uint32_t name = rd32(b->types + off), info = rd32(b->types + off + 4);
        int64_t extra = extra_bytes(kind_of(info), vlen_of(info));
        if (extra < 0 || name >= str_len || (uint64_t)extra > type_len - off - TYPE_HDR ||
            n + 1 >= MAX_TYPES) {
            lx_btf_free(b);
            return hv_errk(err, HV_ERR_GUEST, "btf: type %u (kind %u at offset %llu) is malformed",
                           n + 1, kind_of(info), (unsigned long long)off);
        }
        if (n + 2 > cap) {
            uint32_t *v = hv_vec_grow(b->type_off, &cap, n + 2, sizeof(*v));
            if (!v) {
                lx_btf_free(b);
                return hv_errk(err, HV_ERR_NO_MEMORY, "btf: out of memory");
            }
            b->type_off = v;
        }
        b->type_off[++n] = (uint32_t)off;
        off += TYPE_HDR + (uint64_t)extra;
    }
    b->ntypes = n;
    return 0;
bad_header:
    lx_btf_free(b);
    return hv_errk(err, HV_ERR_GUEST,
                   "btf: not a BTF header (magic 0xeb9f, version 1, sections inside)");
}

static const uint8_t *type_at(const struct lx_btf *b, uint32_t id)
{
    return id >= 1 && id <= b->ntypes ? b->types + b->type_off[id] : NULL;
}

static const char *name_at(const struct lx_btf *b, uint32_t off)
{
    return off < b->strs_len ? b->strs + off : "";
}

/* Follow typedefs and modifiers to the type they name; 0 if the chain breaks. */
static uint32_t resolve(const struct lx_btf *b, uint32_t id)
{
    for (int i = 0; i < MAX_CHAIN; i++) {
        const uint8_t *t = type_at(b, id);
        if (!t)
            return 0;
        unsigned k = kind_of(rd32(t + 4));
        if (k != KIND_TYPEDEF && k != KIND_VOLATILE && k != KIND_CONST && k != KIND_RESTRICT &&
            k != KIND_TYPE_TAG)
            return id;
        id = rd32(t + 8);
    }
    return 0;
}

bool lx_btf_type_size(const struct lx_btf *b, uint32_t id, uint64_t *size)
{
    uint64_t mult = 1;
    for (int i = 0; i < MAX_CHAIN; i++) {
        id = resolve(b, id);
        const uint8_t *t = type_at(b, id);
        if (!t)
            return false;
        unsigned k = kind_of(rd32(t + 4));
        switch (k) {
        case KIND_INT:
        case KIND_STRUCT:
        case KIND_UNION:
        case KIND_ENUM:
        case KIND_ENUM64:
        case KIND_FLOAT:
        case KIND_DATASEC:
            *size = mult * rd32(t + 8);
            return true;
        case KIND_PTR:
            *size = mult * 8;
            return true;
        case KIND_ARRAY: {
            uint32_t nelems = rd32(t + TYPE_HDR + 8);
            if (nelems && mult > UINT32_MAX)
                return false;
            mult *= nelems;
            id = rd32(t + TYPE_HDR);
            break;
        }
        default:
            return false;
        }
    }
    return false;
}

uint32_t lx_btf_find_struct(const struct lx_btf *b, const char *name)
{
    for (uint32_t id = 1; id <= b->ntypes; id++) {
        const uint8_t *t = type_at(b, id);
        unsigned k = kind_of(rd32(t + 4));
        if ((k == KIND_STRUCT || k == KIND_UNION) && !strcmp(name_at(b, rd32(t)), name))
            return id;
    }
    return 0;
}

/* One lookup's state: the name sought and the work done so far. Anonymous members are searched
 * depth first; a forged type made of W anonymous members of its own type would cost W^depth
 * without a bound on the total (docs/reliability.md, "Budgets"). */
struct search {
    const char *name;
    size_t name_len;
    uint64_t work; /* members examined */
};

/* One member of struct/union `sid` by name, searching anonymous members too. */
static bool find_member(const struct lx_btf *b, struct search *q, uint32_t sid, int depth,
                        uint64_t *bit_off, uint32_t *mtype, uint32_t *bitfield)
{
    if (depth > MAX_DEPTH)
        return false;
    const uint8_t *t = type_at(b, resolve(b, sid));
    if (!t)
        return false;
    uint32_t info = rd32(t + 4);
    unsigned k = kind_of(info);
    if (k != KIND_STRUCT && k != KIND_UNION)
        return false;
    for (unsigned i = 0; i < vlen_of(info); i++) {
        if (q->work >= LX_BTF_MAX_WORK)
            return false;
        q->work++;
        const uint8_t *m = t + TYPE_HDR + 12 * i;
        uint32_t mname = rd32(m), type = rd32(m + 4), off = rd32(m + 8);
        /* btf.rst: with kind_flag, bits 0-23 are the bit offset and 24-31 the bitfield size. */
        uint64_t bits = kflag_of(info) ? (off & 0xffffff) : off;
        uint32_t bf = kflag_of(info) ? off >> 24 : 0;
        const char *n = name_at(b, mname);
        if (!*n) {
            uint64_t inner;
            if (find_member(b, q, type, depth + 1, &inner, mtype, bitfield)) {
                *bit_off = bits + inner;
                return true;
            }
            continue;
        }
        if (strlen(n) == q->name_len && !memcmp(n, q->name, q->name_len)) {
            *bit_off = bits;
            *mtype = type;
            *bitfield = bf;
            return true;
        }
    }
    return false;
}

bool lx_btf_member(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t *offset,
                   uint64_t *size)
{
    return lx_btf_member_counted(b, sid, path, offset, size, NULL);
}

bool lx_btf_member_counted(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t *offset,
                           uint64_t *size, uint64_t *work)
{
    struct search q = {0};
    bool found = false;
    uint64_t total_bits = 0;
    uint32_t type = sid;
    const char *p = path;
    for (int part = 0; part < MAX_PATH_PARTS; part++) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        uint64_t bits;
        uint32_t bitfield;
        q.name = p;
        q.name_len = len;
        if (!len || !find_member(b, &q, type, 0, &bits, &type, &bitfield) || bitfield || bits % 8)
            break;
        total_bits += bits;
        if (!dot) {
            *offset = total_bits / 8;
            found = lx_btf_type_size(b, type, size);
            break;
        }
        p = dot + 1;
    }
    if (work)
        *work = q.work;
    return found;
}

bool lx_btf_bitfield(const struct lx_btf *b, uint32_t sid, const char *name, uint64_t *bit_off,
                     uint32_t *bits)
{
    uint32_t type, bf;
    struct search q = {.name = name, .name_len = strlen(name)};
    if (!find_member(b, &q, sid, 0, bit_off, &type, &bf))
        return false;
    if (bf) {
        *bits = bf;
        return true;
    }
    /* Without kind_flag a bitfield's width is its int type's (btf.rst, BTF_KIND_INT: bits 0-7
     * of the trailing word are nr_bits, bits 16-23 an offset added to the member's). */
    const uint8_t *t = type_at(b, resolve(b, type));
    if (t && kind_of(rd32(t + 4)) == KIND_INT) {
        uint32_t enc = rd32(t + TYPE_HDR);
        *bit_off += (enc >> 16) & 0xff;
        *bits = enc & 0xff;
        return *bits != 0;
    }
    uint64_t size;
    if (!lx_btf_type_size(b, type, &size) || size > 8)
        return false;
    *bits = (uint32_t)size * 8;
    return true;
}

bool lx_btf_enum_value(const struct lx_btf *b, const char *name, int64_t *value)
{
    for (uint32_t id = 1; id <= b->ntypes; id++) {
        const uint8_t *t = type_at(b, id);
        uint32_t info = rd32(t + 4);
        unsigned k = kind_of(info);
        if (k != KIND_ENUM && k != KIND_ENUM64)
            continue;
        /* btf.rst: struct btf_enum {name_off, s32 val}; struct btf_enum64 {name_off, val_lo32,
         * val_hi32}; kind_flag set: the values are signed. The load checked vlen fits. */
        size_t each = k == KIND_ENUM ? 8 : 12;
        for (unsigned i = 0; i < vlen_of(info); i++) {
            const uint8_t *e = t + TYPE_HDR + each * i;
            if (strcmp(name_at(b, rd32(e)), name))
                continue;
            if (k == KIND_ENUM)
                *value = kflag_of(info) ? (int64_t)(int32_t)rd32(e + 4) : (int64_t)rd32(e + 4);
            else
                *value = (int64_t)((uint64_t)rd32(e + 8) << 32 | rd32(e + 4));
            return true;
        }
    }
    return false;
}
