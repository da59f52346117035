/* Strict streaming FXT decoder, written from the FXT specification; it shares no code with the
 * encoders on purpose (reader.h). */
#include "fxt/reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vector.h"

/* Bits lo..hi (inclusive) of w, the spec's `[lo .. hi]`. */
static uint64_t bits(uint64_t w, unsigned lo, unsigned hi)
{
    unsigned n = hi - lo + 1;
    return n >= 64 ? w : (w >> lo) & ((1ull << n) - 1);
}

#define MAGIC_WORD    0x0016547846040010ull /* spec "Magic number record" */
#define MAX_PROVIDERS 4096
#define NORMAL_MAX    4095 /* 12-bit record size */

struct fxtr_provider {
    uint32_t id;
    struct fxtr_string name;
    uint64_t ticks_per_second; /* 0 until its initialization record */
    struct fxtr_string *str;   /* index -> string; ptr NULL = unregistered */
    uint32_t str_cap;
    struct {
        uint64_t pid, tid;
        bool set;
    } thr[256];
};

/* A cursor over the words of one record (or of one argument inside it). */
struct cur {
    const uint8_t *p;
    uint64_t n, i; /* words available, words consumed */
};

struct ctx {
    struct fxtr_reader *r;
    struct fxtr_record *rec;
    struct hv_err *err;
};

static int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *c, const char *fmt, ...)
{
    char msg[HV_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* Everything the reader rejects is the file's fault, but for an allocation. */
    return hv_errk(c->err, strstr(msg, "out of memory") ? HV_ERR_NO_MEMORY : HV_ERR_CORRUPT,
                   "offset 0x%zx: %s", c->rec->offset, msg);
}

static uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int take(struct ctx *c, struct cur *k, uint64_t *out, const char *what)
{
    *out = 0;
    if (k->i >= k->n)
        return fail(c, "%s: runs past the end of its declared size", what);
    *out = load64(k->p + 8 * k->i);
    k->i++;
    return 0;
}

/* A padded byte stream of len bytes. */
static int take_stream(struct ctx *c, struct cur *k, uint64_t len, const uint8_t **out,
                       const char *what)
{
    uint64_t w = (len + 7) / 8;
    *out = NULL;
    if (w > k->n - k->i)
        return fail(c, "%s: %llu bytes run past the end of its declared size", what,
                    (unsigned long long)len);
    *out = k->p + 8 * k->i;
    k->i += w;
    return 0;
}

static struct fxtr_provider *cur_prov(struct fxtr_reader *r)
{
    return r->cur < 0 ? NULL : &r->prov[r->cur];
}

static int take_strref(struct ctx *c, struct cur *k, unsigned ref, struct fxtr_string *out,
                       const char *what)
{
    out->ptr = "";
    out->len = 0;
    if (ref == 0)
        return 0;
    if (ref & 0x8000) {
        const uint8_t *p;
        if (take_stream(c, k, ref & 0x7fff, &p, what))
            return -1;
        out->ptr = (const char *)p;
        out->len = ref & 0x7fff;
        return 0;
    }
    struct fxtr_provider *pv = cur_prov(c->r);
    if (!pv || ref >= pv->str_cap || !pv->str[ref].ptr)
        return fail(c, "%s: string index %u is not registered", what, ref);
    *out = pv->str[ref];
    return 0;
}

static int take_thread(struct ctx *c, struct cur *k, unsigned ref, uint64_t *pid, uint64_t *tid)
{
    *pid = *tid = 0;
    if (ref == 0) {
        if (take(c, k, pid, "inline process koid") || take(c, k, tid, "inline thread koid"))
            return -1;
        return 0;
    }
    struct fxtr_provider *pv = cur_prov(c->r);
    if (!pv || !pv->thr[ref].set)
        return fail(c, "thread index %u is not registered", ref);
    *pid = pv->thr[ref].pid;
    *tid = pv->thr[ref].tid;
    return 0;
}

static int need_provider(struct ctx *c)
{
    if (c->r->cur < 0)
        return fail(c, "record type %u before any provider section", c->rec->type);
    return 0;
}

static int need_ticks(struct ctx *c)
{
    if (need_provider(c))
        return -1;
    if (!cur_prov(c->r)->ticks_per_second)
        return fail(c, "timestamped record (type %u) before provider %u's initialization record",
                    c->rec->type, cur_prov(c->r)->id);
    return 0;
}

/* Arguments (spec "Arguments"): each declares its size; the value must use exactly that. */
static int take_args(struct ctx *c, struct cur *k, unsigned nargs, struct fxtr_arg *args)
{
    for (unsigned i = 0; i < nargs; i++) {
        if (k->i >= k->n)
            return fail(c, "argument %u of %u: past the end of the record", i + 1, nargs);
        uint64_t h = load64(k->p + 8 * k->i);
        uint64_t size = bits(h, 4, 15);
        if (size == 0)
            return fail(c, "argument %u: size 0", i + 1);
        if (size > k->n - k->i)
            return fail(c, "argument %u: %llu words run past the end of the record", i + 1,
                        (unsigned long long)size);
        struct cur a = {.p = k->p + 8 * k->i, .n = size, .i = 1};
        struct fxtr_arg *x = &args[i];
        memset(x, 0, sizeof(*x));
        x->type = (unsigned)bits(h, 0, 3);
        if (take_strref(c, &a, (unsigned)bits(h, 16, 31), &x->name, "argument name"))
            return -1;
        switch (x->type) {
        case FXTR_ARG_NULL:
            break;
        case FXTR_ARG_I32: /* in the header */
            x->v.i = (int32_t)(uint32_t)bits(h, 32, 63);
            break;
        case FXTR_ARG_U32:
            x->v.u = bits(h, 32, 63);
            break;
        case FXTR_ARG_I64:
        case FXTR_ARG_U64:
        case FXTR_ARG_DOUBLE:
        case FXTR_ARG_POINTER:
        case FXTR_ARG_KOID:
            if (take(c, &a, &x->v.u, "argument value"))
                return -1;
            break;
        case FXTR_ARG_STRING:
            if (take_strref(c, &a, (unsigned)bits(h, 32, 47), &x->v.s, "string argument value"))
                return -1;
            break;
        case FXTR_ARG_BOOL: /* bit 32 */
            x->v.u = bits(h, 32, 32);
            break;
        case FXTR_ARG_BLOB: { /* byte size in [32..63] */
            const uint8_t *p;
            uint64_t nb = bits(h, 32, 63);
            if (take_stream(c, &a, nb, &p, "blob argument"))
                return -1;
            x->v.blob.ptr = p;
            x->v.blob.n = (uint32_t)((nb + 7) / 8);
            break;
        }
        default: /* unknown argument type: skipped by its size, like Perfetto does */
            a.i = size;
            break;
        }
        if (a.i != size)
            return fail(c, "argument %u (type %u): declares %llu words, its value uses %llu", i + 1,
                        x->type, (unsigned long long)size, (unsigned long long)a.i);
        k->i += size;
    }
    return 0;
}

static struct fxtr_provider *find_provider(struct fxtr_reader *r, uint32_t id, long *index)
{
    for (size_t i = 0; i < r->nprov; i++) {
        if (r->prov[i].id == id) {
            if (index)
                *index = (long)i;
            return &r->prov[i];
        }
    }
    return NULL;
}

static int parse_metadata(struct ctx *c, uint64_t h, struct cur *k)
{
    struct fxtr_record *rec = c->rec;
    struct fxtr_reader *r = c->r;
    unsigned mtype = (unsigned)bits(h, 16, 19);
    uint32_t id = (uint32_t)bits(h, 20, 51);
    rec->u.meta.mtype = mtype;
    rec->u.meta.provider_id = id;
    switch (mtype) {
    case 1: { /* provider info */
        const uint8_t *p;
        uint64_t len = bits(h, 52, 59);
        if (take_stream(c, k, len, &p, "provider name"))
            return -1;
        rec->u.meta.name = (struct fxtr_string){(const char *)p, (uint32_t)len};
        struct fxtr_provider *pv = find_provider(r, id, NULL);
        if (!pv) {
            if (r->nprov >= MAX_PROVIDERS)
                return fail(c, "more than %d providers", MAX_PROVIDERS);
            if (r->nprov == r->prov_cap) {
                struct fxtr_provider *np =
                    hv_vec_grow(r->prov, &r->prov_cap, r->nprov + 1, sizeof(*np));
                if (!np)
                    return fail(c, "out of memory");
                r->prov = np;
            }
            pv = &r->prov[r->nprov++];
            memset(pv, 0, sizeof(*pv));
            pv->id = id;
        }
        /* The reader's own copy: a windowed reader's buffer moves on (fxtr_rebase). */
        char *copy = malloc((size_t)len + 1);
        if (!copy)
            return fail(c, "out of memory");
        memcpy(copy, p, len);
        copy[len] = 0;
        free((void *)pv->name.ptr);
        pv->name = (struct fxtr_string){copy, (uint32_t)len};
        return 0;
    }
    case 2: { /* provider section */
        long idx;
        if (!find_provider(r, id, &idx))
            return fail(c, "provider section for provider %u, which has no provider info", id);
        r->cur = idx;
        rec->provider = id;
        return 0;
    }
    case 3: /* provider event */
        rec->u.meta.event_id = (unsigned)bits(h, 52, 55);
        return 0;
    case 4: { /* trace info */
        unsigned tt = (unsigned)bits(h, 20, 23);
        rec->u.meta.trace_info_type = tt;
        rec->u.meta.provider_id = 0;
        if (tt == 0 && h != MAGIC_WORD)
            return fail(c, "bad magic number record 0x%016llx", (unsigned long long)h);
        if (tt != 0) {
            rec->unknown = true;
            k->i = k->n;
        }
        return 0;
    }
    default:
        rec->unknown = true;
        k->i = k->n;
        return 0;
    }
}

static int parse_string(struct ctx *c, uint64_t h, struct cur *k)
{
    uint32_t index = (uint32_t)bits(h, 16, 30);
    uint64_t len = bits(h, 32, 46);
    const uint8_t *p;
    if (need_provider(c) || take_stream(c, k, len, &p, "string"))
        return -1;
    c->rec->u.string.index = index;
    c->rec->u.string.str = (struct fxtr_string){(const char *)p, (uint32_t)len};
    if (index == 0)
        return 0; /* spec: index 0 must be ignored */
    struct fxtr_provider *pv = cur_prov(c->r);
    if (index >= pv->str_cap) { /* indexed by the string's id: the new slots start empty */
        size_t old = pv->str_cap, ncap = old;
        struct fxtr_string *ns = hv_vec_grow(pv->str, &ncap, (size_t)index + 1, sizeof(*ns));
        if (!ns)
            return fail(c, "out of memory");
        memset(ns + old, 0, (ncap - old) * sizeof(*ns));
        pv->str = ns;
        pv->str_cap = (uint32_t)ncap;
    }
    /* The reader's own copy (a windowed reader's buffer moves on: fxtr_rebase); a zero-length
     * string still counts as registered: a non-NULL pointer. */
    char *copy = malloc((size_t)len + 1);
    if (!copy)
        return fail(c, "out of memory");
    memcpy(copy, p, len);
    copy[len] = 0;
    free((void *)pv->str[index].ptr);
    pv->str[index] = (struct fxtr_string){copy, (uint32_t)len};
    return 0;
}

static int parse_thread(struct ctx *c, uint64_t h, struct cur *k)
{
    unsigned index = (unsigned)bits(h, 16, 23);
    uint64_t pid, tid;
    if (need_provider(c) || take(c, k, &pid, "thread process koid") ||
        take(c, k, &tid, "thread koid"))
        return -1;
    c->rec->u.thread.index = index;
    c->rec->u.thread.pid = pid;
    c->rec->u.thread.tid = tid;
    if (index) {
        struct fxtr_provider *pv = cur_prov(c->r);
        pv->thr[index].pid = pid;
        pv->thr[index].tid = tid;
        pv->thr[index].set = true;
    }
    return 0;
}

static int parse_event(struct ctx *c, uint64_t h, struct cur *k)
{
    struct fxtr_record *rec = c->rec;
    unsigned etype = (unsigned)bits(h, 16, 19);
    if (etype > 10) { /* unknown event type: skip by the record size */
        rec->unknown = true;
        k->i = k->n;
        return need_provider(c);
    }
    if (need_ticks(c))
        return -1;
    rec->u.event.etype = etype;
    rec->u.event.nargs = (unsigned)bits(h, 20, 23);
    if (take(c, k, &rec->u.event.ts, "event timestamp") ||
        take_thread(c, k, (unsigned)bits(h, 24, 31), &rec->u.event.pid, &rec->u.event.tid) ||
        take_strref(c, k, (unsigned)bits(h, 32, 47), &rec->u.event.category, "event category") ||
        take_strref(c, k, (unsigned)bits(h, 48, 63), &rec->u.event.name, "event name") ||
        take_args(c, k, rec->u.event.nargs, rec->u.event.args))
        return -1;
    /* Counter 1, complete 4, async 5..7, flow 8..10 carry one more word (spec "Event record"). */
    rec->u.event.has_extra = etype == 1 || etype >= 4;
    if (rec->u.event.has_extra && take(c, k, &rec->u.event.extra, "event type-specific word"))
        return -1;
    return 0;
}

static int parse_blob(struct ctx *c, uint64_t h, struct cur *k)
{
    struct fxtr_record *rec = c->rec;
    uint64_t size = bits(h, 32, 46);
    const uint8_t *p;
    if (need_provider(c) ||
        take_strref(c, k, (unsigned)bits(h, 16, 31), &rec->u.blob.name, "blob name") ||
        take_stream(c, k, size, &p, "blob payload"))
        return -1;
    rec->u.blob.btype = (unsigned)bits(h, 48, 55);
    rec->u.blob.payload = p;
    rec->u.blob.size = (uint32_t)size;
    return 0;
}

static int parse_uobj(struct ctx *c, uint64_t h, struct cur *k)
{
    /* Userspace object (spec): pointer, process koid only if the thread ref is inline, name,
     * arguments. Validated for framing; not exposed in detail. */
    unsigned tref = (unsigned)bits(h, 16, 23);
    uint64_t ptr, pid, tid;
    struct fxtr_string name;
    struct fxtr_arg args[FXTR_MAX_ARGS];
    if (need_provider(c) || take(c, k, &ptr, "object pointer"))
        return -1;
    if (tref == 0) {
        if (take(c, k, &pid, "object process koid"))
            return -1;
    } else if (take_thread(c, k, tref, &pid, &tid)) {
        return -1;
    }
    return take_strref(c, k, (unsigned)bits(h, 24, 39), &name, "object name") ||
                   take_args(c, k, (unsigned)bits(h, 40, 43), args)
               ? -1
               : 0;
}

static int parse_kobj(struct ctx *c, uint64_t h, struct cur *k)
{
    struct fxtr_record *rec = c->rec;
    rec->u.kobj.obj_type = (unsigned)bits(h, 16, 23);
    rec->u.kobj.nargs = (unsigned)bits(h, 40, 43);
    if (need_provider(c) || take(c, k, &rec->u.kobj.koid, "object koid") ||
        take_strref(c, k, (unsigned)bits(h, 24, 39), &rec->u.kobj.name, "object name") ||
        take_args(c, k, rec->u.kobj.nargs, rec->u.kobj.args))
        return -1;
    return 0;
}

static int parse_sched(struct ctx *c, uint64_t h, struct cur *k)
{
    struct fxtr_record *rec = c->rec;
    unsigned st = (unsigned)bits(h, 60, 63);
    struct fxtr_arg args[FXTR_MAX_ARGS];
    rec->u.sched.stype = st;
    if (st > 2) {
        rec->unknown = true;
        k->i = k->n;
        return need_provider(c);
    }
    if (need_ticks(c) || take(c, k, &rec->u.sched.ts, "scheduling timestamp"))
        return -1;
    if (st == 0) { /* legacy context switch */
        uint64_t pid;
        rec->u.sched.cpu = (unsigned)bits(h, 16, 23);
        return take_thread(c, k, (unsigned)bits(h, 28, 35), &pid, &rec->u.sched.out_tid) ||
                       take_thread(c, k, (unsigned)bits(h, 36, 43), &pid, &rec->u.sched.in_tid)
                   ? -1
                   : 0;
    }
    rec->u.sched.cpu = (unsigned)bits(h, 20, 35);
    if (st == 1 && take(c, k, &rec->u.sched.out_tid, "outgoing thread"))
        return -1;
    if (take(c, k, &rec->u.sched.in_tid, "incoming / woken thread"))
        return -1;
    return take_args(c, k, (unsigned)bits(h, 16, 19), args);
}

static int parse_log(struct ctx *c, uint64_t h, struct cur *k)
{
    struct fxtr_record *rec = c->rec;
    uint64_t len = bits(h, 16, 30);
    const uint8_t *p;
    if (need_ticks(c) || take(c, k, &rec->u.log.ts, "log timestamp") ||
        take_thread(c, k, (unsigned)bits(h, 32, 39), &rec->u.log.pid, &rec->u.log.tid) ||
        take_stream(c, k, len, &p, "log message"))
        return -1;
    rec->u.log.msg = (struct fxtr_string){(const char *)p, (uint32_t)len};
    return 0;
}

static int parse_large(struct ctx *c, uint64_t h, struct cur *k)
{
    struct fxtr_record *rec = c->rec;
    rec->u.large.ltype = (unsigned)bits(h, 36, 39);
    rec->u.large.format = (unsigned)bits(h, 40, 43);
    if (need_provider(c))
        return -1;
    if (rec->u.large.ltype != 0 || rec->u.large.format > 1) {
        rec->unknown = true;
        k->i = k->n;
        return 0;
    }
    uint64_t fh;
    struct fxtr_arg args[FXTR_MAX_ARGS];
    if (take(c, k, &fh, "large blob format header") ||
        take_strref(c, k, (unsigned)bits(fh, 0, 15), &rec->u.large.category, "blob category") ||
        take_strref(c, k, (unsigned)bits(fh, 16, 31), &rec->u.large.name, "blob name"))
        return -1;
    if (rec->u.large.format == 0) {
        if (need_ticks(c) || take(c, k, &rec->u.large.ts, "blob timestamp") ||
            take_thread(c, k, (unsigned)bits(fh, 36, 43), &rec->u.large.pid, &rec->u.large.tid) ||
            take_args(c, k, (unsigned)bits(fh, 32, 35), args))
            return -1;
    }
    const uint8_t *p;
    if (take(c, k, &rec->u.large.size, "blob size") ||
        take_stream(c, k, rec->u.large.size, &p, "large blob payload"))
        return -1;
    rec->u.large.payload = p;
    return 0;
}

size_t fxtr_whole_records(const void *buf, size_t len)
{
    const uint8_t *b = buf;
    size_t off = 0;
    while (len - off >= 8) {
        uint64_t h = load64(b + off);
        uint64_t words = (h & 15) == 15 ? bits(h, 4, 35) : bits(h, 4, 15);
        if (words == 0 || words > (len - off) / 8)
            break;
        off += (size_t)words * 8;
    }
    return off;
}

void fxtr_init(struct fxtr_reader *r, const void *buf, size_t len)
{
    memset(r, 0, sizeof(*r));
    r->buf = buf;
    r->len = len;
    r->cur = -1;
}

void fxtr_rebase(struct fxtr_reader *r, const void *buf, size_t len, size_t base)
{
    r->buf = buf;
    r->len = len;
    r->off = 0;
    r->base = base;
}

void fxtr_free(struct fxtr_reader *r)
{
    for (size_t i = 0; i < r->nprov; i++) {
        for (uint32_t k = 0; k < r->prov[i].str_cap; k++)
            free((void *)r->prov[i].str[k].ptr);
        free(r->prov[i].str);
        free((void *)r->prov[i].name.ptr);
    }
    free(r->prov);
    r->prov = NULL;
    r->nprov = r->prov_cap = 0;
}

/* The input ends inside a record: the end, said in r->cut (the records before it stand; a
 * damaged file reports what it holds). */
static int cut_end(struct fxtr_reader *r, size_t need)
{
    r->cut = true;
    r->cut_offset = r->base + r->off;
    r->cut_have = r->len - r->off;
    r->cut_need = need;
    r->off = r->len;
    return 0;
}

int fxtr_next(struct fxtr_reader *r, struct fxtr_record *rec, struct hv_err *err)
{
    /* Whole record: a caller must never see a previous record's fields (an unknown record
     * leaves its union part zero). */
    memset(rec, 0, sizeof(*rec));
    rec->offset = r->base + r->off;
    struct ctx c = {.r = r, .rec = rec, .err = err};
    if (r->off == r->len && !r->seen_magic)
        return fail(&c, "empty input: no FXT magic number record");
    if (r->off == r->len)
        return 0;
    if (r->len - r->off < 8 && r->seen_magic)
        return cut_end(r, 0);
    if (r->len - r->off < 8)
        return fail(&c, "%zu trailing bytes, less than a record header", r->len - r->off);
    uint64_t h = load64(r->buf + r->off);
    rec->type = (uint32_t)bits(h, 0, 3);
    rec->nwords = rec->type == 15 ? bits(h, 4, 35) : bits(h, 4, 15);
    if (!r->seen_magic && h != MAGIC_WORD)
        return fail(&c, "the file does not start with the FXT magic number record");
    r->seen_magic = true;
    if (rec->nwords == 0)
        return fail(&c, "record of type %u has size 0", rec->type);
    if (rec->type == 15 && rec->nwords > NORMAL_MAX)
        return fail(&c, "large record of %llu words (4096 or more breaks 12-bit framing)",
                    (unsigned long long)rec->nwords);
    if (rec->nwords > (r->len - r->off) / 8)
        return cut_end(r, (size_t)rec->nwords * 8);
    struct cur k = {.p = r->buf + r->off, .n = rec->nwords, .i = 1};
    int rc;
    switch (rec->type) {
    case 0:
        rc = parse_metadata(&c, h, &k);
        break;
    case 1:
        rc = need_provider(&c) || take(&c, &k, &rec->u.init.ticks_per_second, "ticks per second")
                 ? -1
                 : 0;
        if (!rc && rec->u.init.ticks_per_second == 0)
            rc = fail(&c, "initialization record with 0 ticks per second");
        if (!rc)
            cur_prov(r)->ticks_per_second = rec->u.init.ticks_per_second;
        /* The spec's record is 2 words, but writers in the wild append words after the rate
         * (Jane Street's `tracing` writes 4: rate, 0, a base time). Perfetto and Fuchsia's
         * reader read the rate and move on by the size, so accept and expose them. */
        rec->u.init.extra_words = (uint32_t)(k.n - k.i);
        k.i = k.n;
        break;
    case 2:
        rc = parse_string(&c, h, &k);
        break;
    case 3:
        rc = parse_thread(&c, h, &k);
        break;
    case 4:
        rc = parse_event(&c, h, &k);
        break;
    case 5:
        rc = parse_blob(&c, h, &k);
        break;
    case 6:
        rc = parse_uobj(&c, h, &k);
        break;
    case 7:
        rc = parse_kobj(&c, h, &k);
        break;
    case 8:
        rc = parse_sched(&c, h, &k);
        break;
    case 9:
        rc = parse_log(&c, h, &k);
        break;
    case 15:
        rc = parse_large(&c, h, &k);
        break;
    default: /* types 10..14: reserved; reported and skipped */
        rec->unknown = true;
        k.i = k.n;
        rc = 0;
        break;
    }
    if (rc)
        return -1;
    if (k.i != k.n)
        return fail(&c, "record of type %u declares %llu words but its fields use %llu", rec->type,
                    (unsigned long long)k.n, (unsigned long long)k.i);
    if (r->cur >= 0) {
        rec->provider = r->prov[r->cur].id;
        rec->ticks_per_second = r->prov[r->cur].ticks_per_second;
    }
    r->off += 8 * rec->nwords;
    r->nrecords++;
    return 1;
}

int fxtr_record_error(const struct fxtr_record *rec, struct hv_err *err, const char *fmt, ...)
{
    char msg[HV_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return hv_errk(err, HV_ERR_CORRUPT, "offset 0x%zx: %s", rec->offset, msg);
}
