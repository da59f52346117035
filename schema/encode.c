/* hvprof's records (schema/encode.h); layouts in docs/fxt-samples.md. */
#include "schema/encode.h"

#include <string.h>

struct sample_plan {
    uint32_t fields;
    uint32_t n_user, n_kernel, n_py, n_rt;
    uint64_t walk;
    size_t words;
};

static unsigned popcount_single_word_fields(uint32_t f)
{
    /* Every present field is one word, the stacks one count word plus their frames. */
    return (unsigned)__builtin_popcount(f & HVFXT_SF_KNOWN);
}

/* Decide which fields and how many frames go into the record so it stays under 4095 words. */
static void sample_plan(const struct hvfxt_sample *s, struct sample_plan *pl)
{
    pl->fields = s->fields & HVFXT_SF_KNOWN;
    pl->walk = s->walk;
    uint32_t nk = (pl->fields & HVFXT_SF_KERNEL_STACK) ? s->n_kernel : 0;
    uint32_t nu = (pl->fields & HVFXT_SF_USER_STACK) ? s->n_user : 0;
    /* Runtime frames go whole (the id word, then pairs, the innermost first), within their own
     * bound; so do an old recording's Python frames. */
    uint32_t np = (pl->fields & HVFXT_SF_PYTHON_STACK) ? s->n_py & ~1u : 0;
    if (np > 2 * HVFXT_SAMPLE_MAX_PY_FRAMES)
        np = 2 * HVFXT_SAMPLE_MAX_PY_FRAMES;
    pl->n_py = np;
    uint32_t nr = (pl->fields & HVFXT_SF_RUNTIME_STACK) && s->n_rt ? 1 + ((s->n_rt - 1) & ~1u) : 0;
    if (nr > 1 + 2 * HVFXT_SAMPLE_MAX_RT_FRAMES)
        nr = 1 + 2 * HVFXT_SAMPLE_MAX_RT_FRAMES;
    if (!nr)
        pl->fields &= ~(uint32_t)HVFXT_SF_RUNTIME_STACK;
    pl->n_rt = nr;
    size_t fixed = 2 + popcount_single_word_fields(pl->fields) + np + nr;
    if (fixed + nk + nu > FXT_MAX_RECORD_WORDS) {
        if (!(pl->fields & HVFXT_SF_WALK)) {
            pl->fields |= HVFXT_SF_WALK;
            pl->walk = 0;
            fixed++;
        }
        size_t budget = FXT_MAX_RECORD_WORDS - fixed;
        if (nk > budget) {
            nk = (uint32_t)budget;
            pl->walk |= HVFXT_WALK_KERNEL_TRUNC;
        }
        if (nu > budget - nk) {
            nu = (uint32_t)(budget - nk);
            pl->walk |= HVFXT_WALK_USER_TRUNC;
        }
    }
    pl->n_kernel = nk;
    pl->n_user = nu;
    pl->words = fixed + nk + nu;
}

size_t hvfxt_sample_words(const struct hvfxt_sample *s)
{
    struct sample_plan pl;
    sample_plan(s, &pl);
    return pl.words;
}

size_t hvfxt_enc_sample(uint64_t *buf, size_t cap, const struct hvfxt_sample *s)
{
    struct sample_plan pl;
    sample_plan(s, &pl);
    if (pl.words > cap)
        return 0;
    uint64_t *p = buf;
    *p++ = fxt_blob_header_words(HVFXT_BLOB_SAMPLE, pl.words - 1);
    *p++ = pl.fields;
    /* The fields in bit order, straight-line from the table (schema/sample_fields.h). */
#define ENC_WORD(member, count) *p++ = s->member;
#define ENC_WALK(member, count) *p++ = pl.walk; /* the plan's: it marks cut stacks */
#define ENC_STACK(member, count)                                                                   \
    {                                                                                              \
        *p++ = pl.count;                                                                           \
        if (pl.count)                                                                              \
            memcpy(p, s->member, 8 * (size_t)pl.count);                                            \
        p += pl.count;                                                                             \
    }
#define ENC_FIELD(NAME, bit, member, count, shape, wire, label, fmt)                               \
    if (pl.fields & HVFXT_SF_##NAME)                                                               \
    ENC_##shape(member, count)
    HVFXT_SAMPLE_FIELDS(ENC_FIELD)
#undef ENC_FIELD
#undef ENC_STACK
#undef ENC_WALK
#undef ENC_WORD
    return (size_t)(p - buf);
}

bool hvfxt_record_ts(const uint64_t *words, size_t nwords, uint64_t *ts)
{
    if (nwords < 2)
        return false;
    uint64_t h = words[0];
    switch (FXT_GET(FXT_REC_TYPE, h)) {
    case FXT_RT_EVENT: /* header, timestamp (FXT spec "Event record") */
        *ts = words[1];
        return true;
    case FXT_RT_BLOB: {
        if (FXT_GET(FXT_BLOB_TYPE, h) != HVFXT_BLOB_SAMPLE || !(words[1] & HVFXT_SF_BOOT_TS))
            return false;
        /* The fields before it, in the encoder's order: continuation, completion, pid, tid. */
        size_t at = 2 + (size_t)__builtin_popcountll(words[1] & 0xfu);
        if (at >= nwords)
            return false;
        *ts = words[at];
        return true;
    }
    default:
        return false;
    }
}

/* Where field `mask` of an encoded sample record is: the index of its word (a stack's: of its
 * first frame, *count its frames; a word's: 1). False when the record is no sample, lacks the
 * field, has an unknown one, or its stacks run past its words. */
static bool field_at(const uint64_t *words, size_t nwords, uint32_t mask, size_t *index,
                     uint64_t *count)
{
    if (nwords < 2 || FXT_GET(FXT_REC_TYPE, words[0]) != FXT_RT_BLOB ||
        FXT_GET(FXT_BLOB_TYPE, words[0]) != HVFXT_BLOB_SAMPLE)
        return false;
    uint64_t f = words[1];
    if (!(f & mask) || (f & ~(uint64_t)HVFXT_SF_KNOWN))
        return false;
    /* The fields before it, in the table's order: a stack is its count and its words. */
    size_t at = 2;
    for (unsigned i = 0; i < HVFXT_SF_COUNT && at < nwords; i++) {
        const struct hvfxt_sample_field_info *fi = &hvfxt_sample_fields[i];
        if (!(f & (1ull << fi->bit)))
            continue;
        uint64_t n = 1;
        if (fi->shape == HVFXT_SF_SHAPE_STACK) {
            n = words[at++];
            if (n > nwords - at)
                return false;
        }
        if ((1ull << fi->bit) == mask) {
            *index = at;
            *count = n;
            return true;
        }
        at += n;
    }
    return false;
}

bool hvfxt_record_word(const uint64_t *words, size_t nwords, uint32_t mask, uint64_t *value)
{
    size_t at;
    uint64_t n;
    for (unsigned i = 0; i < HVFXT_SF_COUNT; i++)
        if ((1u << hvfxt_sample_fields[i].bit) == mask &&
            hvfxt_sample_fields[i].shape == HVFXT_SF_SHAPE_STACK)
            return false; /* a stack is no word */
    if (!field_at(words, nwords, mask, &at, &n) || at >= nwords)
        return false;
    *value = words[at];
    return true;
}

bool hvfxt_record_runtime(const uint64_t *words, size_t nwords, uint64_t *pid, const uint64_t **rt,
                          uint32_t *n_rt)
{
    size_t at;
    uint64_t n;
    if (!hvfxt_record_word(words, nwords, HVFXT_SF_PID, pid) ||
        !field_at(words, nwords, HVFXT_SF_RUNTIME_STACK, &at, &n) || n == 0)
        return false;
    *rt = words + at;
    *n_rt = (uint32_t)n;
    return true;
}

size_t hvfxt_enc_module(uint64_t *buf, size_t cap, const struct hvfxt_module *m)
{
    if (m->build_id_len > 0xff || (m->name_len && !m->name) || (m->build_id_len && !m->build_id))
        return 0;
    size_t payload = 2 + fxt_stream_words(m->name_len) + fxt_stream_words(m->build_id_len);
    size_t n = 1 + payload;
    if (n > cap || n > FXT_MAX_RECORD_WORDS)
        return 0;
    buf[0] = fxt_blob_header_words(HVFXT_BLOB_MODULE, payload);
    buf[1] = m->id;
    buf[2] = (uint64_t)m->name_len | ((uint64_t)m->build_id_len << 16);
    fxt_put_stream(buf + 3, m->name, m->name_len);
    fxt_put_stream(buf + 3 + fxt_stream_words(m->name_len), m->build_id, m->build_id_len);
    return n;
}

size_t hvfxt_enc_mapping(uint64_t *buf, size_t cap, const struct hvfxt_mapping *m)
{
    size_t words = m->has_file_offset ? 8 : 7;
    if (cap < words + 1)
        return 0;
    buf[0] = fxt_blob_header_words(HVFXT_BLOB_MAPPING, words);
    buf[1] = m->pid;
    buf[2] = m->module_id;
    buf[3] = m->start;
    buf[4] = m->size;
    buf[5] = m->vaddr;
    buf[6] = m->flags;
    buf[7] = m->ts;
    if (m->has_file_offset)
        buf[8] = m->file_offset;
    return words + 1;
}

static bool symbol_ok(const struct hvfxt_symbol *s)
{
    if (s->name_len > HVFXT_SYMBOL_NAME_MAX || (s->name_len && !s->name))
        return false;
    if (s->name_len == 0)
        return s->type == 0; /* an end marker */
    if ((unsigned char)s->type <= 0x20 || (unsigned char)s->type >= 0x7f)
        return false;
    for (size_t i = 0; i < s->name_len; i++)
        if ((unsigned char)s->name[i] <= 0x20 || (unsigned char)s->name[i] >= 0x7f)
            return false;
    return true;
}

/* Payload: module id; count [0..31] and name bytes [32..63]; count addresses; the names, each
 * "<type><name>\0" ("\0" alone for an end marker), zero-padded to a word. */
size_t hvfxt_enc_symbols(uint64_t *buf, size_t cap, uint64_t module_id,
                         const struct hvfxt_symbol *syms, size_t n, size_t *taken)
{
    *taken = 0;
    if (cap > FXT_MAX_RECORD_WORDS)
        cap = FXT_MAX_RECORD_WORDS;
    size_t count = 0, bytes = 0;
    while (count < n && count < UINT32_MAX) {
        const struct hvfxt_symbol *s = &syms[count];
        if (!symbol_ok(s))
            return 0;
        size_t b = bytes + (s->name_len ? 1u + s->name_len : 0) + 1;
        if (1 + 2 + (count + 1) + fxt_stream_words(b) > cap)
            break;
        bytes = b;
        count++;
    }
    if (count == 0)
        return 0;
    size_t payload = 2 + count + fxt_stream_words(bytes);
    buf[0] = fxt_blob_header_words(HVFXT_BLOB_SYMBOLS, payload);
    buf[1] = module_id;
    buf[2] = (uint64_t)count | ((uint64_t)bytes << 32);
    for (size_t i = 0; i < count; i++)
        buf[3 + i] = syms[i].addr;
    uint8_t *p = (uint8_t *)(buf + 3 + count);
    memset(p, 0, fxt_stream_words(bytes) * 8);
    for (size_t i = 0; i < count; i++) {
        if (syms[i].name_len) {
            *p++ = (uint8_t)syms[i].type;
            memcpy(p, syms[i].name, syms[i].name_len);
            p += syms[i].name_len;
        }
        *p++ = 0;
    }
    *taken = count;
    return 1 + payload;
}

static size_t enc_loss_event(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l,
                             const char *name, const char *count_arg)
{
    uint32_t vcpu = l->ring_id; /* hvprof gives each vCPU's ring its index */
    struct fxt_arg args[4] = {
        {.type = FXT_ARG_U64, .name = fxt_str_inline(count_arg), .v.u64 = l->dropped},
        {.type = FXT_ARG_U32, .name = fxt_str_inline(HVFXT_LOSS_ARG_VCPU), .v.u32 = vcpu},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_LOSS_ARG_FIRST_TS),
         .v.u64 = l->first_ts},
        {.type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_LOSS_ARG_LAST_TS), .v.u64 = l->last_ts},
    };
    struct fxt_str name_str = fxt_str_inline(name);
    struct fxt_event ev = {
        .type = FXT_EV_INSTANT,
        .ts = l->first_ts,
        .thread = {.index = 0, .pid = HVFXT_KOID_VM, .tid = hvfxt_koid_vcpu(vcpu)},
        .category = fxt_str_inline(HVFXT_CATEGORY),
        .name = name_str,
        .args = args,
        .nargs = 4,
    };
    return fxt_enc_event(buf, cap, &ev);
}

size_t hvfxt_enc_loss(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l)
{
    return enc_loss_event(buf, cap, l, HVFXT_LOSS_NAME, HVFXT_LOSS_ARG_DROPPED);
}

size_t hvfxt_enc_overwrite(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l)
{
    return enc_loss_event(buf, cap, l, HVFXT_OVERWRITE_NAME, HVFXT_OVERWRITE_ARG_COUNT);
}

size_t hvfxt_enc_marker(uint64_t *buf, size_t cap, const char *name, uint64_t ts,
                        const struct fxt_arg *args, unsigned nargs)
{
    struct fxt_event ev = {
        .type = FXT_EV_INSTANT,
        .ts = ts,
        .thread = {.index = 0, .pid = HVFXT_KOID_VM, .tid = HVFXT_KOID_CONTROL},
        .category = fxt_str_inline(HVFXT_CATEGORY),
        .name = fxt_str_inline(name),
        .args = args,
        .nargs = nargs,
    };
    return fxt_enc_event(buf, cap, &ev);
}

/* pid, [runtime], code, base; first line [0..31]; lengths: name [0..15], file [16..31],
 * position table [32..63]; then the three byte streams (docs/fxt-samples.md). */
size_t hvfxt_enc_code(uint64_t *buf, size_t cap, const struct hvfxt_code *c, bool python_record)
{
    if (c->table_len > HVFXT_CODE_TABLE_MAX || (c->name_len && !c->name) ||
        (c->filename_len && !c->filename) || (c->table_len && !c->table) ||
        (python_record && c->runtime != HVFXT_RUNTIME_PYTHON) || !c->runtime)
        return 0;
    size_t payload = (python_record ? 5 : 6) + fxt_stream_words(c->name_len) +
                     fxt_stream_words(c->filename_len) + fxt_stream_words(c->table_len);
    size_t n = 1 + payload;
    if (n > cap || n > FXT_MAX_RECORD_WORDS)
        return 0;
    uint64_t *p = buf;
    *p++ = fxt_blob_header_words(python_record ? HVFXT_BLOB_PYCODE : HVFXT_BLOB_CODE, payload);
    *p++ = c->pid;
    if (!python_record)
        *p++ = c->runtime;
    *p++ = c->code;
    *p++ = c->base;
    *p++ = (uint32_t)c->firstlineno;
    *p++ = (uint64_t)c->name_len | (uint64_t)c->filename_len << 16 | (uint64_t)c->table_len << 32;
    fxt_put_stream(p, c->name, c->name_len);
    p += fxt_stream_words(c->name_len);
    fxt_put_stream(p, c->filename, c->filename_len);
    p += fxt_stream_words(c->filename_len);
    fxt_put_stream(p, c->table, c->table_len);
    return n;
}
