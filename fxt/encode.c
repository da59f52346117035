/* Generic FXT record encoders (layouts: the FXT specification, "Record types"). */
#include "fxt/encode.h"

#include <string.h>

/* Spec: "Streams are padded with zeros to the next 8-byte boundary". */
void fxt_put_stream(uint64_t *dst, const void *src, size_t len)
{
    size_t n = fxt_stream_words(len);
    if (n == 0)
        return;
    dst[n - 1] = 0;
    memcpy(dst, src, len);
}

static uint64_t header(unsigned type, size_t nwords)
{
    return FXT_MAKE(FXT_REC_TYPE, type) | FXT_MAKE(FXT_REC_SIZE, nwords);
}

struct fxt_str fxt_str_inline(const char *s)
{
    size_t len = s ? strlen(s) : 0;
    if (len > FXT_STRING_LEN_MAX)
        len = FXT_STRING_LEN_MAX;
    return (struct fxt_str){.s = s, .len = (uint16_t)len, .index = 0};
}

static uint64_t str_ref(struct fxt_str s)
{
    if (s.index)
        return s.index & 0x7fff;
    return s.len ? (FXT_STRREF_INLINE | s.len) : 0;
}

static size_t str_words(struct fxt_str s)
{
    return s.index ? 0 : fxt_stream_words(s.len);
}

static bool str_ok(struct fxt_str s)
{
    return s.index <= FXT_STRING_INDEX_MAX && s.len <= FXT_STRING_LEN_MAX && (s.len == 0 || s.s);
}

static uint64_t *put_str(uint64_t *p, struct fxt_str s)
{
    if (s.index || !s.len)
        return p;
    fxt_put_stream(p, s.s, s.len);
    return p + fxt_stream_words(s.len);
}

size_t fxt_enc_magic(uint64_t *buf, size_t cap)
{
    if (cap < 1)
        return 0;
    buf[0] = FXT_MAGIC_RECORD;
    return 1;
}

size_t fxt_enc_init(uint64_t *buf, size_t cap, uint64_t ticks_per_second)
{
    if (cap < 2 || ticks_per_second == 0)
        return 0;
    buf[0] = header(FXT_RT_INIT, 2);
    buf[1] = ticks_per_second;
    return 2;
}

size_t fxt_enc_provider_info(uint64_t *buf, size_t cap, uint32_t id, const char *name, size_t len)
{
    size_t n = 1 + fxt_stream_words(len);
    if (len > FXT_PROVIDER_NAME_MAX || n > cap || (len && !name))
        return 0;
    buf[0] = header(FXT_RT_METADATA, n) | FXT_MAKE(FXT_META_TYPE, FXT_META_PROVIDER_INFO) |
             FXT_MAKE(FXT_META_PROVIDER, id) | FXT_MAKE(FXT_META_NAME_LEN, len);
    fxt_put_stream(buf + 1, name, len);
    return n;
}

size_t fxt_enc_provider_section(uint64_t *buf, size_t cap, uint32_t id)
{
    if (cap < 1)
        return 0;
    buf[0] = header(FXT_RT_METADATA, 1) | FXT_MAKE(FXT_META_TYPE, FXT_META_PROVIDER_SECTION) |
             FXT_MAKE(FXT_META_PROVIDER, id);
    return 1;
}

size_t fxt_enc_provider_event(uint64_t *buf, size_t cap, uint32_t id, unsigned event)
{
    if (cap < 1 || event > 0xf)
        return 0;
    buf[0] = header(FXT_RT_METADATA, 1) | FXT_MAKE(FXT_META_TYPE, FXT_META_PROVIDER_EVENT) |
             FXT_MAKE(FXT_META_PROVIDER, id) | FXT_MAKE(FXT_META_EVENT_ID, event);
    return 1;
}

size_t fxt_enc_string(uint64_t *buf, size_t cap, uint16_t index, const char *s, size_t len)
{
    size_t n = 1 + fxt_stream_words(len);
    if (index == 0 || index > FXT_STRING_INDEX_MAX || len > FXT_STRING_LEN_MAX || n > cap ||
        (len && !s))
        return 0;
    buf[0] = header(FXT_RT_STRING, n) | FXT_MAKE(FXT_STRING_INDEX, index) |
             FXT_MAKE(FXT_STRING_LEN, len);
    fxt_put_stream(buf + 1, s, len);
    return n;
}

size_t fxt_enc_thread(uint64_t *buf, size_t cap, uint8_t index, uint64_t pid, uint64_t tid)
{
    if (cap < 3 || index == 0)
        return 0;
    buf[0] = header(FXT_RT_THREAD, 3) | FXT_MAKE(FXT_THREAD_INDEX, index);
    buf[1] = pid;
    buf[2] = tid;
    return 3;
}

/* Size in words of one argument (FXT spec "Arguments"), 0 if it cannot be encoded. */
static size_t arg_words(const struct fxt_arg *a)
{
    if (!str_ok(a->name))
        return 0;
    size_t n = 1 + str_words(a->name);
    switch (a->type) {
    case FXT_ARG_NULL:
    case FXT_ARG_I32:
    case FXT_ARG_U32:
    case FXT_ARG_BOOL:
        return n;
    case FXT_ARG_I64:
    case FXT_ARG_U64:
    case FXT_ARG_DOUBLE:
    case FXT_ARG_POINTER:
    case FXT_ARG_KOID:
        return n + 1;
    case FXT_ARG_STRING:
        return str_ok(a->v.str) ? n + str_words(a->v.str) : 0;
    }
    return 0;
}

static size_t args_words(const struct fxt_arg *args, unsigned nargs)
{
    size_t n = 0;
    for (unsigned i = 0; i < nargs; i++) {
        size_t w = arg_words(&args[i]);
        if (!w)
            return 0;
        n += w;
    }
    return n;
}

static uint64_t *put_args(uint64_t *p, const struct fxt_arg *args, unsigned nargs)
{
    for (unsigned i = 0; i < nargs; i++) {
        const struct fxt_arg *a = &args[i];
        uint64_t h = FXT_MAKE(FXT_ARGF_TYPE, a->type) | FXT_MAKE(FXT_ARGF_SIZE, arg_words(a)) |
                     FXT_MAKE(FXT_ARGF_NAME, str_ref(a->name));
        switch (a->type) {
        case FXT_ARG_I32:
            h |= FXT_MAKE(FXT_ARGF_VALUE32, (uint32_t)a->v.i32);
            break;
        case FXT_ARG_U32:
            h |= FXT_MAKE(FXT_ARGF_VALUE32, a->v.u32);
            break;
        case FXT_ARG_BOOL:
            h |= FXT_MAKE(FXT_ARGF_BOOL, a->v.b ? 1 : 0);
            break;
        case FXT_ARG_STRING:
            h |= FXT_MAKE(FXT_ARGF_STR_VALUE, str_ref(a->v.str));
            break;
        default:
            break;
        }
        *p++ = h;
        p = put_str(p, a->name);
        switch (a->type) {
        case FXT_ARG_I64:
            *p++ = (uint64_t)a->v.i64;
            break;
        case FXT_ARG_U64:
        case FXT_ARG_POINTER:
        case FXT_ARG_KOID:
            *p++ = a->v.u64;
            break;
        case FXT_ARG_DOUBLE:
            memcpy(p++, &a->v.f64, 8);
            break;
        case FXT_ARG_STRING:
            p = put_str(p, a->v.str);
            break;
        default:
            break;
        }
    }
    return p;
}

size_t fxt_enc_kobj(uint64_t *buf, size_t cap, unsigned obj_type, uint64_t koid,
                    struct fxt_str name, const struct fxt_arg *args, unsigned nargs)
{
    if (nargs > FXT_MAX_ARGS || obj_type > 0xff || !str_ok(name))
        return 0;
    size_t aw = args_words(args, nargs);
    if (nargs && !aw)
        return 0;
    size_t n = 2 + str_words(name) + aw;
    if (n > cap || n > FXT_MAX_RECORD_WORDS)
        return 0;
    buf[0] = header(FXT_RT_KERNEL_OBJECT, n) | FXT_MAKE(FXT_KOBJ_TYPE, obj_type) |
             FXT_MAKE(FXT_KOBJ_NAME, str_ref(name)) | FXT_MAKE(FXT_KOBJ_NARGS, nargs);
    buf[1] = koid;
    put_args(put_str(buf + 2, name), args, nargs);
    return n;
}

size_t fxt_enc_kobj_process(uint64_t *buf, size_t cap, uint64_t koid, const char *name)
{
    return fxt_enc_kobj(buf, cap, FXT_OBJ_PROCESS, koid, fxt_str_inline(name), NULL, 0);
}

size_t fxt_enc_kobj_thread(uint64_t *buf, size_t cap, uint64_t koid, const char *name,
                           uint64_t process_koid)
{
    /* FXT spec "Kernel object record": threads carry a "process" argument of koid type (8);
     * Perfetto and trace2json ignore the thread otherwise. */
    struct fxt_arg a = {
        .type = FXT_ARG_KOID, .name = fxt_str_inline("process"), .v.u64 = process_koid};
    return fxt_enc_kobj(buf, cap, FXT_OBJ_THREAD, koid, fxt_str_inline(name), &a, 1);
}

static size_t event_extra_words(enum fxt_event_type t)
{
    switch (t) {
    case FXT_EV_INSTANT:
    case FXT_EV_BEGIN:
    case FXT_EV_END:
        return 0; /* no legacy instant "scope" word: strict readers reject it (FXT spec "Event
                     record") */
    default:
        return 1;
    }
}

size_t fxt_enc_event(uint64_t *buf, size_t cap, const struct fxt_event *ev)
{
    if ((unsigned)ev->type > FXT_EV_FLOW_END || ev->nargs > FXT_MAX_ARGS || !str_ok(ev->category) ||
        !str_ok(ev->name))
        return 0;
    size_t aw = args_words(ev->args, ev->nargs);
    if (ev->nargs && !aw)
        return 0;
    size_t extra = event_extra_words(ev->type);
    size_t n =
        2 + (ev->thread.index ? 0 : 2) + str_words(ev->category) + str_words(ev->name) + aw + extra;
    if (n > cap || n > FXT_MAX_RECORD_WORDS)
        return 0;
    buf[0] = header(FXT_RT_EVENT, n) | FXT_MAKE(FXT_EVENT_TYPE, ev->type) |
             FXT_MAKE(FXT_EVENT_NARGS, ev->nargs) | FXT_MAKE(FXT_EVENT_THREAD, ev->thread.index) |
             FXT_MAKE(FXT_EVENT_CAT, str_ref(ev->category)) |
             FXT_MAKE(FXT_EVENT_NAME, str_ref(ev->name));
    uint64_t *p = buf + 1;
    *p++ = ev->ts;
    if (!ev->thread.index) {
        *p++ = ev->thread.pid;
        *p++ = ev->thread.tid;
    }
    p = put_str(p, ev->category);
    p = put_str(p, ev->name);
    p = put_args(p, ev->args, ev->nargs);
    if (extra)
        *p = ev->extra;
    return n;
}

size_t fxt_enc_blob(uint64_t *buf, size_t cap, struct fxt_str name, unsigned blob_type,
                    const void *payload, size_t nbytes)
{
    if (!str_ok(name) || blob_type > 0xff || nbytes > FXT_MAX(FXT_BLOB_SIZE) ||
        (nbytes && !payload))
        return 0;
    size_t n = 1 + str_words(name) + fxt_stream_words(nbytes);
    if (n > cap || n > FXT_MAX_RECORD_WORDS)
        return 0;
    buf[0] = header(FXT_RT_BLOB, n) | FXT_MAKE(FXT_BLOB_NAME, str_ref(name)) |
             FXT_MAKE(FXT_BLOB_SIZE, nbytes) | FXT_MAKE(FXT_BLOB_TYPE, blob_type);
    fxt_put_stream(put_str(buf + 1, name), payload, nbytes);
    return n;
}

uint64_t fxt_blob_header_words(unsigned blob_type, size_t payload_words)
{
    return header(FXT_RT_BLOB, 1 + payload_words) | FXT_MAKE(FXT_BLOB_SIZE, 8 * payload_words) |
           FXT_MAKE(FXT_BLOB_TYPE, blob_type);
}
