/* HotSpot's VMStructs tables read from outside (hs_vmstructs.h): the entries' layout from the
 * exported offsets, then each table entry by entry up to its NULL-named end, every name copied
 * into one pool. Nothing read is trusted: strides, offsets, counts and names are bounded, and a
 * name must be printable text. */
#include "java/hs_vmstructs.h"

#include <stdlib.h>
#include <string.h>

const char *const hs_sym_names[HS_SYM_COUNT] = {
#define HS_SYM_NAME_(id, name) [HS_SYM_##id] = name,
    HS_SYMS(HS_SYM_NAME_)
#undef HS_SYM_NAME_
};

/* A NUL-terminated name at va, read a page at a time so that a name near the end of a mapping
 * reads: its bytes into out (HS_MAX_NAME). False if unreadable, too long or not printable. */
static bool read_name(const struct rt_mem *m, uint64_t va, char *out)
{
    size_t got = 0;
    while (got < HS_MAX_NAME) {
        uint64_t at = va + got;
        size_t chunk = 4096 - (size_t)(at & 4095);
        if (chunk > HS_MAX_NAME - got)
            chunk = HS_MAX_NAME - got;
        if (!rt_read(m, at, out + got, chunk))
            return false;
        for (size_t i = got; i < got + chunk; i++) {
            if (!out[i])
                return i > 0;
            if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
                return false;
        }
        got += chunk;
    }
    return false;
}

static int pool_add(struct hs_vmstructs *vs, const char *s, uint32_t *at, struct hv_err *err)
{
    size_t len = strlen(s) + 1;
    if (vs->pool_len + len > HS_MAX_POOL)
        return hv_errk(err, HV_ERR_LIMIT, "HotSpot's tables: names over %u bytes", HS_MAX_POOL);
    if (vs->pool_len + len > vs->pool_cap) {
        size_t cap = vs->pool_cap ? vs->pool_cap * 2 : 64 * 1024;
        while (cap < vs->pool_len + len)
            cap *= 2;
        char *p = realloc(vs->pool, cap);
        if (!p)
            return hv_errk(err, HV_ERR_NO_MEMORY, "HotSpot's tables: %zu bytes of names", cap);
        vs->pool = p;
        vs->pool_cap = cap;
    }
    memcpy(vs->pool + vs->pool_len, s, len);
    *at = (uint32_t)vs->pool_len;
    vs->pool_len += len;
    return 0;
}

/* Names repeat (every field of a type names it): the last few pointers read are remembered. */
struct name_memo {
    uint64_t va[8];
    uint32_t at[8];
    unsigned next;
};

/* The name at pointer va into the pool (0: NULL, the empty string), or -1. */
static int intern(struct hs_vmstructs *vs, struct name_memo *memo, const struct rt_mem *m,
                  uint64_t va, const char *what, uint32_t *at, struct hv_err *err)
{
    *at = 0;
    if (!va)
        return 0;
    for (unsigned i = 0; i < 8; i++)
        if (memo->va[i] == va) {
            *at = memo->at[i];
            return 0;
        }
    char name[HS_MAX_NAME];
    if (!read_name(m, va, name))
        return hv_errk(err, HV_ERR_CORRUPT,
                       "HotSpot's tables: %s at 0x%llx is no name (unreadable, not text or over "
                       "%d bytes)",
                       what, (unsigned long long)va, HS_MAX_NAME);
    if (pool_add(vs, name, at, err) < 0)
        return -1;
    memo->va[memo->next] = va;
    memo->at[memo->next] = *at;
    memo->next = (memo->next + 1) % 8;
    return 0;
}

/* The words the exported layout variables hold: each an offset in an entry (< its stride, with
 * `width` bytes to read there) or the stride itself. */
static bool layout_word(const struct rt_mem *m, const uint64_t addr[HS_SYM_COUNT], enum hs_sym s,
                        uint64_t *out, struct hv_err *err)
{
    if (!addr[s])
        return hv_errk(err, HV_ERR_UNSUPPORTED, "HotSpot's tables: no symbol %s", hs_sym_names[s]),
               false;
    if (!rt_read_u64(m, addr[s], out))
        return hv_errk(err, HV_ERR_GUEST, "HotSpot's tables: %s at 0x%llx not readable",
                       hs_sym_names[s], (unsigned long long)addr[s]),
               false;
    return true;
}

/* One table's description: its array pointer, its stride and the offsets of its members. */
struct table {
    const char *what;
    enum hs_sym array, stride;
    unsigned n;         /* members */
    enum hs_sym off[6]; /* each member's offset variable */
    unsigned width[6];  /* the bytes each member is (8: a pointer or uint64, 4: an int32) */
};

static const struct table STRUCTS = {"gHotSpotVMStructs",
                                     HS_SYM_STRUCTS,
                                     HS_SYM_S_STRIDE,
                                     6,
                                     {HS_SYM_S_TYPE, HS_SYM_S_FIELD, HS_SYM_S_TYPESTR,
                                      HS_SYM_S_STATIC, HS_SYM_S_OFFSET, HS_SYM_S_ADDRESS},
                                     {8, 8, 8, 4, 8, 8}};
static const struct table TYPES = {
    "gHotSpotVMTypes",
    HS_SYM_TYPES,
    HS_SYM_T_STRIDE,
    6,
    {HS_SYM_T_NAME, HS_SYM_T_SUPER, HS_SYM_T_OOP, HS_SYM_T_INT, HS_SYM_T_UNSIGNED, HS_SYM_T_SIZE},
    {8, 8, 4, 4, 4, 8}};
static const struct table INTS = {"gHotSpotVMIntConstants",        HS_SYM_INTS, HS_SYM_I_STRIDE, 2,
                                  {HS_SYM_I_NAME, HS_SYM_I_VALUE}, {8, 4}};
static const struct table LONGS = {
    "gHotSpotVMLongConstants",       HS_SYM_LONGS, HS_SYM_L_STRIDE, 2,
    {HS_SYM_L_NAME, HS_SYM_L_VALUE}, {8, 8}};

/* Each entry's members, widened to 64 bits (an int32 sign-extended), entry after entry until
 * the one whose first member (its name) is NULL. Calls each(entry) for the others. */
typedef int (*entry_fn)(struct hs_vmstructs *vs, struct name_memo *memo, const struct rt_mem *m,
                        const uint64_t v[6], struct hv_err *err);

static int read_table(struct hs_vmstructs *vs, const struct rt_mem *m,
                      const uint64_t addr[HS_SYM_COUNT], const struct table *t, entry_fn each,
                      size_t *count, struct hv_err *err)
{
    uint64_t base, stride, off[6];
    if (!layout_word(m, addr, t->array, &base, err) ||
        !layout_word(m, addr, t->stride, &stride, err))
        return -1;
    if (stride < 8 || stride > HS_MAX_STRIDE)
        return hv_errk(err, HV_ERR_CORRUPT, "HotSpot's tables: %s's stride %llu (8..%d)", t->what,
                       (unsigned long long)stride, HS_MAX_STRIDE);
    for (unsigned i = 0; i < t->n; i++) {
        if (!layout_word(m, addr, t->off[i], &off[i], err))
            return -1;
        if (off[i] > stride - t->width[i])
            return hv_errk(
                err, HV_ERR_CORRUPT, "HotSpot's tables: %s = %llu, past an entry of %llu bytes",
                hs_sym_names[t->off[i]], (unsigned long long)off[i], (unsigned long long)stride);
    }
    if (!base)
        return hv_errk(err, HV_ERR_GUEST, "HotSpot's tables: %s is not set yet", t->what);
    struct name_memo memo = {0};
    for (size_t e = 0;; e++) {
        if (e >= HS_MAX_ENTRIES)
            return hv_errk(err, HV_ERR_LIMIT, "HotSpot's tables: %s has no end within %d entries",
                           t->what, HS_MAX_ENTRIES);
        unsigned char raw[HS_MAX_STRIDE];
        uint64_t at = base + e * stride;
        if (at < base || !rt_read(m, at, raw, stride))
            return hv_errk(err, HV_ERR_GUEST,
                           "HotSpot's tables: %s's entry %zu at 0x%llx not "
                           "readable",
                           t->what, e, (unsigned long long)at);
        uint64_t v[6] = {0};
        for (unsigned i = 0; i < t->n; i++) {
            if (t->width[i] == 8) {
                memcpy(&v[i], raw + off[i], 8);
            } else {
                int32_t w;
                memcpy(&w, raw + off[i], 4);
                v[i] = (uint64_t)(int64_t)w;
            }
        }
        if (!v[0]) {
            *count = e;
            return 0;
        }
        if (each(vs, &memo, m, v, err) < 0)
            return -1;
    }
}

#define GROW(vs, arr, n)                                                                           \
    ((n) % 256 == 0 ? grow((void **)&(vs)->arr, (n) + 256, sizeof(*(vs)->arr), err) : 0)

static int grow(void **arr, size_t n, size_t size, struct hv_err *err)
{
    void *p = realloc(*arr, n * size);
    if (!p)
        return hv_errk(err, HV_ERR_NO_MEMORY, "HotSpot's tables: %zu entries", n);
    *arr = p;
    return 0;
}

static int add_field(struct hs_vmstructs *vs, struct name_memo *memo, const struct rt_mem *m,
                     const uint64_t v[6], struct hv_err *err)
{
    if (GROW(vs, fields, vs->nfields) < 0)
        return -1;
    struct hs_field *f = &vs->fields[vs->nfields];
    if (intern(vs, memo, m, v[0], "a type name", &f->type, err) < 0 ||
        intern(vs, memo, m, v[1], "a field name", &f->name, err) < 0 ||
        intern(vs, memo, m, v[2], "a field's type", &f->type_string, err) < 0)
        return -1;
    if (!f->name)
        return hv_errk(err, HV_ERR_CORRUPT, "HotSpot's tables: a field of %s has no name",
                       hs_str(vs, f->type));
    f->is_static = (uint32_t)v[3] != 0;
    f->value = f->is_static ? v[5] : v[4];
    vs->nfields++;
    return 0;
}

static int add_type(struct hs_vmstructs *vs, struct name_memo *memo, const struct rt_mem *m,
                    const uint64_t v[6], struct hv_err *err)
{
    if (GROW(vs, types, vs->ntypes) < 0)
        return -1;
    struct hs_type *t = &vs->types[vs->ntypes];
    if (intern(vs, memo, m, v[0], "a type name", &t->name, err) < 0 ||
        intern(vs, memo, m, v[1], "a superclass name", &t->super, err) < 0)
        return -1;
    t->is_oop = (uint32_t)v[2] != 0;
    t->is_integer = (uint32_t)v[3] != 0;
    t->is_unsigned = (uint32_t)v[4] != 0;
    t->size = v[5];
    vs->ntypes++;
    return 0;
}

static int add_int(struct hs_vmstructs *vs, struct name_memo *memo, const struct rt_mem *m,
                   const uint64_t v[6], struct hv_err *err)
{
    if (GROW(vs, ints, vs->nints) < 0)
        return -1;
    struct hs_constant *c = &vs->ints[vs->nints];
    if (intern(vs, memo, m, v[0], "a constant's name", &c->name, err) < 0)
        return -1;
    c->value = v[1];
    vs->nints++;
    return 0;
}

static int add_long(struct hs_vmstructs *vs, struct name_memo *memo, const struct rt_mem *m,
                    const uint64_t v[6], struct hv_err *err)
{
    if (GROW(vs, longs, vs->nlongs) < 0)
        return -1;
    struct hs_constant *c = &vs->longs[vs->nlongs];
    if (intern(vs, memo, m, v[0], "a constant's name", &c->name, err) < 0)
        return -1;
    c->value = v[1];
    vs->nlongs++;
    return 0;
}

int hs_vmstructs_read(struct hs_vmstructs *vs, const struct rt_mem *m,
                      const uint64_t addr[HS_SYM_COUNT], struct hv_err *err)
{
    memset(vs, 0, sizeof(*vs));
    uint32_t empty;
    size_t n;
    if (pool_add(vs, "", &empty, err) < 0 ||
        read_table(vs, m, addr, &STRUCTS, add_field, &n, err) < 0 ||
        read_table(vs, m, addr, &TYPES, add_type, &n, err) < 0 ||
        read_table(vs, m, addr, &INTS, add_int, &n, err) < 0 ||
        read_table(vs, m, addr, &LONGS, add_long, &n, err) < 0) {
        hs_vmstructs_free(vs);
        return -1;
    }
    return 0;
}

void hs_vmstructs_free(struct hs_vmstructs *vs)
{
    free(vs->fields);
    free(vs->types);
    free(vs->ints);
    free(vs->longs);
    free(vs->pool);
    memset(vs, 0, sizeof(*vs));
}

static const struct hs_field *find_field(const struct hs_vmstructs *vs, const char *type,
                                         const char *field)
{
    for (size_t i = 0; i < vs->nfields; i++) {
        const struct hs_field *f = &vs->fields[i];
        if (!strcmp(hs_str(vs, f->name), field) && !strcmp(hs_str(vs, f->type), type))
            return f;
    }
    return NULL;
}

bool hs_offset(const struct hs_vmstructs *vs, const char *type, const char *field, uint64_t *out)
{
    const struct hs_field *f = find_field(vs, type, field);
    if (!f || f->is_static)
        return false;
    *out = f->value;
    return true;
}

bool hs_static(const struct hs_vmstructs *vs, const char *type, const char *field, uint64_t *out)
{
    const struct hs_field *f = find_field(vs, type, field);
    if (!f || !f->is_static)
        return false;
    *out = f->value;
    return true;
}

const char *hs_field_type(const struct hs_vmstructs *vs, const char *type, const char *field)
{
    const struct hs_field *f = find_field(vs, type, field);
    return f ? hs_str(vs, f->type_string) : NULL;
}

bool hs_type_size(const struct hs_vmstructs *vs, const char *type, uint64_t *out)
{
    for (size_t i = 0; i < vs->ntypes; i++)
        if (!strcmp(hs_str(vs, vs->types[i].name), type)) {
            *out = vs->types[i].size;
            return true;
        }
    return false;
}

static bool find_constant(const struct hs_constant *c, size_t n, const struct hs_vmstructs *vs,
                          const char *name, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(hs_str(vs, c[i].name), name)) {
            *out = c[i].value;
            return true;
        }
    return false;
}

bool hs_int_constant(const struct hs_vmstructs *vs, const char *name, int64_t *out)
{
    uint64_t v;
    if (!find_constant(vs->ints, vs->nints, vs, name, &v))
        return false;
    *out = (int64_t)v;
    return true;
}

bool hs_long_constant(const struct hs_vmstructs *vs, const char *name, uint64_t *out)
{
    return find_constant(vs->longs, vs->nlongs, vs, name, out);
}
