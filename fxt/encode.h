/* Generic FXT record encoders. Each writes one complete record into a caller-provided word buffer
 * and returns its size in words, or 0 if `cap` words are not enough or an input is out of range
 * (a name too long for its field, too many arguments). No allocation, no locks, no system calls:
 * the vCPU thread encodes straight into its ring slot (fxt/ring.h).
 * Layouts: the FXT specification (Fuchsia's docs/reference/tracing/trace-format.md), "Record
 * types"; docs/fxt-samples.md summarises what hvprof uses. hvprof's own records are encoded by
 * schema/encode.h on top of these. Every record is at most FXT_MAX_RECORD_WORDS (4095) words. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fxt/fields.h"

/* A string reference: an interned index (index != 0), an inline string (s, len), or empty. */
struct fxt_str {
    const char *s;
    uint16_t len;   /* inline length in bytes, <= FXT_STRING_LEN_MAX */
    uint16_t index; /* 1..0x7fff when interned */
};
struct fxt_str fxt_str_inline(const char *s); /* strlen(s), clamped to the 15-bit limit */
static inline struct fxt_str fxt_str_index(uint16_t index)
{
    return (struct fxt_str){.s = 0, .len = 0, .index = index};
}

/* A thread reference: an interned index (1..255), or index 0 and the koids written inline. */
struct fxt_thread {
    uint8_t index;
    uint64_t pid, tid;
};

enum fxt_arg_type {
    FXT_ARG_NULL = 0,
    FXT_ARG_I32 = 1,
    FXT_ARG_U32 = 2,
    FXT_ARG_I64 = 3,
    FXT_ARG_U64 = 4,
    FXT_ARG_DOUBLE = 5,
    FXT_ARG_STRING = 6,
    FXT_ARG_POINTER = 7,
    FXT_ARG_KOID = 8,
    FXT_ARG_BOOL = 9,
};
struct fxt_arg {
    enum fxt_arg_type type;
    struct fxt_str name;
    union {
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64; /* also pointer and koid */
        double f64;
        bool b;
        struct fxt_str str;
    } v;
};
#define FXT_MAX_ARGS 15 /* 4-bit argument count */

enum fxt_event_type {
    FXT_EV_INSTANT = 0,
    FXT_EV_COUNTER = 1,
    FXT_EV_BEGIN = 2,
    FXT_EV_END = 3,
    FXT_EV_COMPLETE = 4,
    FXT_EV_ASYNC_BEGIN = 5,
    FXT_EV_ASYNC_INSTANT = 6,
    FXT_EV_ASYNC_END = 7,
    FXT_EV_FLOW_BEGIN = 8,
    FXT_EV_FLOW_STEP = 9,
    FXT_EV_FLOW_END = 10,
};
struct fxt_event {
    enum fxt_event_type type;
    uint64_t ts;
    struct fxt_thread thread;
    struct fxt_str category, name;
    const struct fxt_arg *args;
    unsigned nargs;
    uint64_t extra; /* counter id / end ts / correlation id / flow id; unused for 0, 2, 3 */
};

size_t fxt_enc_magic(uint64_t *buf, size_t cap);
size_t fxt_enc_init(uint64_t *buf, size_t cap, uint64_t ticks_per_second);
size_t fxt_enc_provider_info(uint64_t *buf, size_t cap, uint32_t id, const char *name, size_t len);
size_t fxt_enc_provider_section(uint64_t *buf, size_t cap, uint32_t id);
size_t fxt_enc_provider_event(uint64_t *buf, size_t cap, uint32_t id, unsigned event);
size_t fxt_enc_string(uint64_t *buf, size_t cap, uint16_t index, const char *s, size_t len);
size_t fxt_enc_thread(uint64_t *buf, size_t cap, uint8_t index, uint64_t pid, uint64_t tid);
size_t fxt_enc_kobj(uint64_t *buf, size_t cap, unsigned obj_type, uint64_t koid,
                    struct fxt_str name, const struct fxt_arg *args, unsigned nargs);
/* A process (obj type 1) and a thread (obj type 2, with the "process" koid argument). */
size_t fxt_enc_kobj_process(uint64_t *buf, size_t cap, uint64_t koid, const char *name);
size_t fxt_enc_kobj_thread(uint64_t *buf, size_t cap, uint64_t koid, const char *name,
                           uint64_t process_koid);
size_t fxt_enc_event(uint64_t *buf, size_t cap, const struct fxt_event *ev);
size_t fxt_enc_blob(uint64_t *buf, size_t cap, struct fxt_str name, unsigned blob_type,
                    const void *payload, size_t nbytes);
/* Streams (strings, blob payloads) take whole words, zero-padded (spec "Encoding primitives"). */
static inline size_t fxt_stream_words(size_t len)
{
    return (len + 7) / 8;
}
/* Copy len bytes to dst and zero the padding of the last word. */
void fxt_put_stream(uint64_t *dst, const void *src, size_t len);
/* The header word of a blob record with an empty name and a payload of whole words, which
 * follows it: for encoders that write their payload in place (schema/encode.c). */
uint64_t fxt_blob_header_words(unsigned blob_type, size_t payload_words);
