/* hvprof's records from FXT records (decode.h), written from docs/fxt-samples.md. */
#include "schema/decode.h"

#include <stdlib.h>
#include <string.h>

/* A cursor over the payload words of one blob. */
struct words {
    const uint8_t *p;
    uint64_t n, i;
};

static bool take(struct words *k, uint64_t *out)
{
    if (k->i >= k->n)
        return false;
    memcpy(out, k->p + 8 * k->i++, 8);
    return true;
}

/* A byte stream of len bytes, padded to whole words. */
static bool take_bytes(struct words *k, uint64_t len, const uint8_t **out)
{
    uint64_t w = (len + 7) / 8;
    if (w > k->n - k->i)
        return false;
    *out = k->p + 8 * k->i;
    k->i += w;
    return true;
}

/* Present fields follow the flags word in bit order (docs/fxt-samples.md, "Sample record"). */
static int decode_sample(const struct fxtr_record *rec, struct words *k,
                         struct hvfxt_sample_view *s, struct hv_err *err)
{
    memset(s, 0, sizeof(*s));
    if (!take(k, &s->fields))
        return fxtr_record_error(rec, err, "sample: no fields_bitflags word");
    if (s->fields & ~(uint64_t)HVFXT_SF_KNOWN)
        return fxtr_record_error(rec, err, "sample: unknown fields_bitflags bits 0x%llx",
                                 (unsigned long long)(s->fields & ~(uint64_t)HVFXT_SF_KNOWN));
        /* The table's fields in bit order: a word lands in `value`, a stack in `stack`. */
#define DEC_VALUE_WORD(member)  &s->member
#define DEC_VALUE_WALK(member)  &s->member
#define DEC_VALUE_STACK(member) NULL
#define DEC_STACK_WORD(member)  NULL
#define DEC_STACK_WALK(member)  NULL
#define DEC_STACK_STACK(member) &s->member
#define DEC_FIELD(NAME, bit, member, count, shape, wire, label, fmt)                               \
    {HVFXT_SF_##NAME, DEC_VALUE_##shape(member), DEC_STACK_##shape(member), wire},
    const struct {
        uint32_t bit;
        uint64_t *value;
        struct fxtr_words *stack;
        const char *name;
    } order[] = {HVFXT_SAMPLE_FIELDS(DEC_FIELD)};
#undef DEC_FIELD
#undef DEC_VALUE_WORD
#undef DEC_VALUE_WALK
#undef DEC_VALUE_STACK
#undef DEC_STACK_WORD
#undef DEC_STACK_WALK
#undef DEC_STACK_STACK
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (!(s->fields & order[i].bit))
            continue;
        uint64_t v;
        if (!take(k, &v))
            return fxtr_record_error(rec, err, "sample: %s runs past the end of the payload",
                                     order[i].name);
        if (order[i].value) {
            *order[i].value = v;
            continue;
        }
        if (v > k->n - k->i)
            return fxtr_record_error(rec, err,
                                     "sample: %s has %llu frames, past the end of the payload",
                                     order[i].name, (unsigned long long)v);
        order[i].stack->ptr = k->p + 8 * k->i;
        order[i].stack->n = (uint32_t)v;
        k->i += v;
    }
    /* Runtime frames: the runtime's id, then whole pairs (docs/fxt-samples.md). */
    if (s->fields & HVFXT_SF_RUNTIME_STACK) {
        uint64_t id = s->rt_stack.n ? fxtr_word(s->rt_stack, 0) : 0;
        if (!id || id >= HVFXT_RUNTIME_MAX || !(s->rt_stack.n & 1))
            return fxtr_record_error(rec, err,
                                     "sample: runtime_stack of %u words, runtime %llu: not the "
                                     "runtime's id and pairs",
                                     s->rt_stack.n, (unsigned long long)id);
    }
    return 0;
}

/* id, lengths word (name length [0..15], build-id length [16..31], the rest reserved), name,
 * build id. */
static int decode_module(const struct fxtr_record *rec, struct words *k,
                         struct hvfxt_module_view *m, struct hv_err *err)
{
    memset(m, 0, sizeof(*m));
    uint64_t lens;
    const uint8_t *name;
    if (!take(k, &m->id) || !take(k, &lens))
        return fxtr_record_error(rec, err, "module: payload shorter than its two fixed words");
    if (lens >> 32)
        return fxtr_record_error(rec, err, "module: reserved bits set in the lengths word");
    uint64_t nl = lens & 0xffff, bl = (lens >> 16) & 0xffff;
    if (!take_bytes(k, nl, &name) || !take_bytes(k, bl, &m->build_id))
        return fxtr_record_error(rec, err, "module: name or build id runs past the payload");
    m->name = (struct fxtr_string){(const char *)name, (uint32_t)nl};
    m->build_id_len = (uint32_t)bl;
    return 0;
}

/* module id; count [0..31], name bytes [32..63]; count addresses; the names (encode.c). */
static int decode_symbols(const struct fxtr_record *rec, struct words *k,
                          struct hvfxt_symbols_view *v, struct hv_err *err)
{
    memset(v, 0, sizeof(*v));
    uint64_t lens;
    if (!take(k, &v->module_id) || !take(k, &lens))
        return fxtr_record_error(rec, err, "symbols: payload shorter than its two fixed words");
    uint64_t count = lens & 0xffffffffu, bytes = lens >> 32;
    if (count > k->n - k->i)
        return fxtr_record_error(rec, err, "symbols: %llu addresses run past the payload",
                                 (unsigned long long)count);
    v->count = (uint32_t)count;
    v->addrs = k->p + 8 * k->i;
    k->i += count;
    const uint8_t *names;
    if (!take_bytes(k, bytes, &names))
        return fxtr_record_error(rec, err, "symbols: names run past the payload");
    v->names = (const char *)names;
    v->names_len = (uint32_t)bytes;
    /* Exactly `count` strings, each empty (an end marker) or a type letter and a name of
     * printable bytes; nothing after the last. */
    uint64_t n = 0;
    size_t start = 0;
    for (size_t i = 0; i < bytes; i++) {
        unsigned char c = names[i];
        if (c == 0) {
            if (i - start == 1 || i - start > 1 + HVFXT_SYMBOL_NAME_MAX)
                return fxtr_record_error(rec, err, "symbols: name %llu has a bad length",
                                         (unsigned long long)n);
            n++;
            start = i + 1;
        } else if (c <= 0x20 || c >= 0x7f) {
            return fxtr_record_error(rec, err, "symbols: byte 0x%02x in name %llu", c,
                                     (unsigned long long)n);
        }
    }
    if (n != count || start != bytes)
        return fxtr_record_error(rec, err, "symbols: %llu names for %llu addresses",
                                 (unsigned long long)n, (unsigned long long)count);
    return 0;
}

bool hvfxt_symbols_next(const struct hvfxt_symbols_view *v, uint32_t *index, uint32_t *pos,
                        uint64_t *addr, char *type, const char **name, size_t *name_len)
{
    if (*index >= v->count || *pos >= v->names_len)
        return false;
    memcpy(addr, v->addrs + 8 * (size_t)*index, 8);
    const char *s = v->names + *pos;
    size_t len = strnlen(s, v->names_len - *pos);
    if (len == 0) {
        *type = 0;
        *name = s;
        *name_len = 0;
    } else {
        *type = s[0];
        *name = s + 1;
        *name_len = len - 1;
    }
    *pos += (uint32_t)len + 1;
    (*index)++;
    return true;
}

/* A runtime code record, or (python) an older recording's Python code record: the same
 * without the runtime word. */
static int decode_code(const struct fxtr_record *rec, struct words *k, bool python,
                       struct hvfxt_code_view *c, struct hv_err *err)
{
    memset(c, 0, sizeof(*c));
    const char *what = python ? "python code" : "runtime code";
    uint64_t first, lens, runtime = HVFXT_RUNTIME_PYTHON;
    if (!take(k, &c->pid) || (!python && !take(k, &runtime)) || !take(k, &c->code) ||
        !take(k, &c->base) || !take(k, &first) || !take(k, &lens))
        return fxtr_record_error(rec, err, "%s: payload shorter than its %u words", what,
                                 python ? 5u : 6u);
    if (!runtime || runtime >= HVFXT_RUNTIME_MAX)
        return fxtr_record_error(rec, err, "%s: runtime %llu is not one", what,
                                 (unsigned long long)runtime);
    c->runtime = (uint8_t)runtime;
    if (first >> 32)
        return fxtr_record_error(rec, err, "%s: reserved bits set in the line word", what);
    c->firstlineno = (int32_t)(uint32_t)first;
    uint64_t ql = lens & 0xffff, fl = (lens >> 16) & 0xffff, tl = lens >> 32;
    if (tl > HVFXT_CODE_TABLE_MAX)
        return fxtr_record_error(rec, err, "%s: a position table of %llu bytes", what,
                                 (unsigned long long)tl);
    const uint8_t *q, *f;
    if (!take_bytes(k, ql, &q) || !take_bytes(k, fl, &f) || !take_bytes(k, tl, &c->table))
        return fxtr_record_error(rec, err, "%s: its names run past the payload", what);
    c->name = (struct fxtr_string){(const char *)q, (uint32_t)ql};
    c->filename = (struct fxtr_string){(const char *)f, (uint32_t)fl};
    c->table_len = (uint32_t)tl;
    return 0;
}

static int decode_mapping(const struct fxtr_record *rec, struct words *k, struct hvfxt_mapping *m,
                          struct hv_err *err)
{
    uint64_t *f[] = {&m->pid, &m->module_id, &m->start, &m->size, &m->vaddr, &m->flags, &m->ts};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!take(k, f[i]))
            return fxtr_record_error(rec, err, "mapping: payload shorter than its 7 words");
    m->has_file_offset = take(k, &m->file_offset);
    return 0;
}

static int decode_blob(const struct fxtr_record *rec, struct hvfxt_record *x, struct hv_err *err)
{
    unsigned bt = rec->u.blob.btype;
    if (bt != HVFXT_BLOB_SAMPLE && bt != HVFXT_BLOB_MODULE && bt != HVFXT_BLOB_MAPPING &&
        bt != HVFXT_BLOB_SYMBOLS && bt != HVFXT_BLOB_PYCODE && bt != HVFXT_BLOB_CODE)
        return 0; /* spec blob types (data, LBR, Perfetto) and others: not ours */
    if (rec->u.blob.size % 8)
        return fxtr_record_error(rec, err,
                                 "hvprof blob type 0x%x: payload of %u bytes is not whole words",
                                 bt, rec->u.blob.size);
    struct words k = {.p = rec->u.blob.payload, .n = rec->u.blob.size / 8};
    int rc;
    if (bt == HVFXT_BLOB_SAMPLE) {
        x->kind = HVFXT_REC_SAMPLE;
        rc = decode_sample(rec, &k, &x->u.sample, err);
    } else if (bt == HVFXT_BLOB_MODULE) {
        x->kind = HVFXT_REC_MODULE;
        rc = decode_module(rec, &k, &x->u.module, err);
    } else if (bt == HVFXT_BLOB_PYCODE || bt == HVFXT_BLOB_CODE) {
        x->kind = HVFXT_REC_CODE;
        rc = decode_code(rec, &k, bt == HVFXT_BLOB_PYCODE, &x->u.code, err);
    } else if (bt == HVFXT_BLOB_SYMBOLS) {
        x->kind = HVFXT_REC_SYMBOLS;
        rc = decode_symbols(rec, &k, &x->u.symbols, err);
    } else {
        x->kind = HVFXT_REC_MAPPING;
        rc = decode_mapping(rec, &k, &x->u.mapping, err);
    }
    if (rc)
        return -1;
    if (k.i != k.n)
        return fxtr_record_error(
            rec, err, "hvprof blob type 0x%x: payload has %llu words, its fields use %llu", bt,
            (unsigned long long)k.n, (unsigned long long)k.i);
    return 0;
}

/* The loss event: an instant event "records_dropped" in category "hvprof" with its four
 * arguments, or the flight recorder's "records_overwritten" (count_arg "overwritten"). An event
 * that merely shares the name is not one. */
static bool decode_loss(const struct fxtr_record *rec, const char *name, const char *count_arg,
                        struct hvfxt_loss_view *l)
{
    if (rec->unknown || rec->u.event.etype != 0 ||
        !fxtr_str_is(rec->u.event.category, HVFXT_CATEGORY) ||
        !fxtr_str_is(rec->u.event.name, name))
        return false;
    const struct {
        const char *name;
        uint64_t *dst;
    } want[] = {{count_arg, &l->dropped},
                {HVFXT_LOSS_ARG_VCPU, &l->vcpu},
                {HVFXT_LOSS_ARG_FIRST_TS, &l->first_ts},
                {HVFXT_LOSS_ARG_LAST_TS, &l->last_ts}};
    unsigned found = 0;
    for (unsigned i = 0; i < rec->u.event.nargs; i++) {
        const struct fxtr_arg *a = &rec->u.event.args[i];
        for (unsigned j = 0; j < 4; j++) {
            if (fxtr_str_is(a->name, want[j].name)) {
                *want[j].dst = a->v.u;
                found |= 1u << j;
            }
        }
    }
    return found == 15;
}

int hvfxt_decode(const struct fxtr_record *rec, struct hvfxt_record *x, struct hv_err *err)
{
    x->kind = HVFXT_REC_OTHER;
    if (rec->unknown)
        return 0;
    if (rec->type == FXTR_BLOB)
        return decode_blob(rec, x, err);
    if (rec->type != FXTR_EVENT)
        return 0;
    if (decode_loss(rec, HVFXT_LOSS_NAME, HVFXT_LOSS_ARG_DROPPED, &x->u.loss))
        x->kind = HVFXT_REC_LOSS;
    else if (decode_loss(rec, HVFXT_OVERWRITE_NAME, HVFXT_OVERWRITE_ARG_COUNT, &x->u.loss))
        x->kind = HVFXT_REC_OVERWRITE;
    return 0;
}

int hvfxt_next(struct fxtr_reader *r, struct hvfxt_record *x, struct hv_err *err)
{
    int rc = fxtr_next(r, &x->fxt, err);
    if (rc != 1) {
        x->kind = HVFXT_REC_OTHER;
        return rc;
    }
    return hvfxt_decode(&x->fxt, x, err) < 0 ? -1 : 1;
}

int hvfxt_stats(const void *buf, size_t len, struct hvfxt_stats *st, struct hv_err *err)
{
    memset(st, 0, sizeof(*st));
    struct fxtr_reader r;
    struct hvfxt_record *x = malloc(sizeof(*x));
    if (!x)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    fxtr_init(&r, buf, len);
    int rc;
    while ((rc = hvfxt_next(&r, x, err)) == 1) {
        st->records++;
        st->bytes += 8 * x->fxt.nwords;
        st->by_type[x->fxt.type & 15]++;
        st->unknown += x->fxt.unknown;
        switch (x->kind) {
        case HVFXT_REC_SAMPLE:
            if (x->u.sample.fields & HVFXT_SF_CONTINUATION_COMPLETION)
                st->completions++;
            else
                st->samples++;
            break;
        case HVFXT_REC_MODULE:
            st->modules++;
            break;
        case HVFXT_REC_MAPPING:
            st->mappings++;
            break;
        case HVFXT_REC_LOSS:
            st->loss_records++;
            st->dropped += x->u.loss.dropped;
            break;
        case HVFXT_REC_OVERWRITE:
            st->overwritten += x->u.loss.dropped;
            break;
        case HVFXT_REC_SYMBOLS:
            st->symbol_records++;
            st->symbols += x->u.symbols.count;
            break;
        default:
            break;
        }
    }
    st->cut = r.cut;
    st->cut_offset = r.cut_offset;
    st->cut_have = r.cut_have;
    st->cut_need = r.cut_need;
    free(x);
    fxtr_free(&r);
    return rc < 0 ? -1 : 0;
}
