/* FXT record encoders. Each writes one complete record into a caller-provided word buffer and
 * returns its size in words, or 0 if `cap` words are not enough or an input is out of range
 * (a name too long for its field, too many arguments). No allocation, no locks, no system calls:
 * the vCPU thread encodes straight into its ring slot (fxt/ring.h).
 * Layouts: FXT spec as summarised in /work/shared/reference/fxt.md section 1; hvprof's blobs in
 * docs/fxt-samples.md. Every record is at most FXT_MAX_RECORD_WORDS (4095) words. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fxt/fields.h"
#include "fxt/hvprof_format.h"

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

/* The sample record (docs/fxt-samples.md). `fields` says which optional fields are present
 * (HVFXT_SF_*); the stacks are read only when their bit is set. Frames that would push the record
 * past 4095 words are cut (kernel stack first kept, user stack cut first) and the walk word gets
 * the TRUNC bit; fxt_sample_words() tells the size in advance. */
struct fxt_sample {
    uint32_t fields;
    uint64_t continuation, completion;
    uint64_t pid, tid, ts;
    const uint64_t *user_stack;
    uint32_t n_user;
    uint32_t vcpu;
    uint8_t cpl;
    uint64_t pc;
    const uint64_t *kernel_stack;
    uint32_t n_kernel;
    uint64_t walk; /* hvfxt_walk_word() */
};
/* Most frames a sample can hold in total (both stacks together). */
#define FXT_SAMPLE_MAX_FRAMES (FXT_MAX_RECORD_WORDS - 1 - 1 - 11)

struct fxt_module {
    uint64_t id;
    const char *name;
    uint16_t name_len;
    const uint8_t *build_id;
    uint16_t build_id_len; /* bytes, <= 255 */
};
struct fxt_mapping {
    uint64_t pid, module_id, start, size, vaddr, flags, ts;
};
struct fxt_loss {
    uint32_t vcpu;
    uint64_t pid, tid; /* thread the event lands on: VM koid and the vCPU's koid */
    uint64_t dropped, first_ts, last_ts;
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

size_t fxt_sample_words(const struct fxt_sample *s);
size_t fxt_enc_sample(uint64_t *buf, size_t cap, const struct fxt_sample *s);
size_t fxt_enc_module(uint64_t *buf, size_t cap, const struct fxt_module *m);
size_t fxt_enc_mapping(uint64_t *buf, size_t cap, const struct fxt_mapping *m);
#define FXT_LOSS_WORDS 18 /* the loss event's fixed size */
size_t fxt_enc_loss(uint64_t *buf, size_t cap, const struct fxt_loss *l);
/* Session markers on the control thread; settings as arguments (at most 15). */
size_t fxt_enc_marker(uint64_t *buf, size_t cap, const char *name, uint64_t ts,
                      const struct fxt_arg *args, unsigned nargs);
