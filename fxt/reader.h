/* A strict, streaming FXT decoder over a byte buffer (typically an mmap'd file), written from
 * the FXT specification (Fuchsia's docs/reference/tracing/trace-format.md) independently of
 * fxt/encode.c. It knows FXT only: hvprof's own records inside FXT blobs and events are decoded
 * on top of it by schema/decode.h.
 *
 * It checks what strict readers check: the magic record first; each record lies inside the
 * buffer and consumes exactly its declared size; argument sizes add up to the record; string and
 * thread indexes are registered (in the current provider) before use; a provider section names a
 * provider whose info came earlier; non-metadata records come after a provider section, and
 * timestamped records after that provider's initialization record; large records stay under 4096
 * words. Unknown record types (and unknown metadata/event/large/blob subtypes) are returned with
 * `unknown` set and skipped, never fatal. Malformed input returns an error naming the offset and
 * the reason; nothing is read outside the buffer.
 *
 * Decoded strings and stacks point into the caller's buffer, which must outlive their use.
 * Strings are not NUL-terminated: use (ptr, len). Stack words may be unaligned: fxtr_word(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/err.h"

struct fxtr_string {
    const char *ptr;
    uint32_t len;
};

/* An array of little-endian u64 words inside the buffer. */
struct fxtr_words {
    const uint8_t *ptr;
    uint32_t n;
};
static inline uint64_t fxtr_word(struct fxtr_words w, uint32_t i)
{
    uint64_t v;
    memcpy(&v, w.ptr + 8 * (size_t)i, 8);
    return v;
}

enum fxtr_rtype {
    FXTR_METADATA = 0,
    FXTR_INIT = 1,
    FXTR_STRING = 2,
    FXTR_THREAD = 3,
    FXTR_EVENT = 4,
    FXTR_BLOB = 5,
    FXTR_UOBJ = 6,
    FXTR_KOBJ = 7,
    FXTR_SCHED = 8,
    FXTR_LOG = 9,
    FXTR_LARGE = 15,
};
#define FXTR_NTYPES 16

/* Argument types (spec "Argument types"). */
enum fxtr_arg_type {
    FXTR_ARG_NULL = 0,
    FXTR_ARG_I32 = 1,
    FXTR_ARG_U32 = 2,
    FXTR_ARG_I64 = 3,
    FXTR_ARG_U64 = 4,
    FXTR_ARG_DOUBLE = 5,
    FXTR_ARG_STRING = 6,
    FXTR_ARG_POINTER = 7,
    FXTR_ARG_KOID = 8,
    FXTR_ARG_BOOL = 9,
    FXTR_ARG_BLOB = 10,
};

struct fxtr_arg {
    unsigned type; /* enum fxtr_arg_type; other values are unknown args, skipped by size */
    struct fxtr_string name;
    union {
        int64_t i;  /* int32 / int64 */
        uint64_t u; /* uint32 / uint64 / pointer / koid / bool */
        double d;
        struct fxtr_string s;
        struct fxtr_words blob;
    } v;
};
#define FXTR_MAX_ARGS 15

struct fxtr_record {
    size_t offset;             /* byte offset in the buffer */
    uint32_t type;             /* FXT record type (header bits [0..3]) */
    uint64_t nwords;           /* declared size */
    uint32_t provider;         /* current provider (meaningful after a section) */
    bool unknown;              /* type or subtype not understood: skipped */
    uint64_t ticks_per_second; /* of the current provider, 0 if none yet */
    union {
        struct {
            unsigned mtype; /* 1 info, 2 section, 3 event, 4 trace info */
            uint32_t provider_id;
            struct fxtr_string name;
            unsigned event_id, trace_info_type;
        } meta;
        struct {
            uint64_t ticks_per_second;
            uint32_t extra_words; /* words after the rate (accepted, not interpreted) */
        } init;
        struct {
            uint32_t index;
            struct fxtr_string str;
        } string;
        struct {
            uint32_t index;
            uint64_t pid, tid;
        } thread;
        struct {
            unsigned etype;
            uint64_t ts, pid, tid;
            struct fxtr_string category, name;
            unsigned nargs;
            struct fxtr_arg args[FXTR_MAX_ARGS];
            uint64_t extra; /* counter/end-ts/correlation/flow word, if the type has one */
            bool has_extra;
        } event;
        struct {
            struct fxtr_string name;
            unsigned btype;
            const uint8_t *payload;
            uint32_t size; /* bytes */
        } blob;
        struct {
            unsigned obj_type;
            uint64_t koid;
            struct fxtr_string name;
            unsigned nargs;
            struct fxtr_arg args[FXTR_MAX_ARGS];
        } kobj;
        struct {
            unsigned stype; /* 0 legacy switch, 1 context switch, 2 wakeup */
            uint64_t ts;
            unsigned cpu;
            uint64_t out_tid, in_tid; /* wakeup: in_tid is the woken thread */
        } sched;
        struct {
            uint64_t ts, pid, tid;
            struct fxtr_string msg;
        } log;
        struct {
            unsigned ltype, format;
            uint64_t ts, pid, tid;
            struct fxtr_string category, name;
            const uint8_t *payload;
            uint64_t size;
        } large;
    } u;
};

struct fxtr_provider;
struct fxtr_reader {
    const uint8_t *buf;
    size_t len, off;
    size_t base; /* the file offset of buf[0] (records' offsets are the file's) */
    uint64_t nrecords;
    struct fxtr_provider *prov; /* array of known providers */
    size_t nprov, prov_cap;
    long cur; /* index into prov, -1 before the first section */
    bool seen_magic;
    /* The input ended inside a record (a copy or download interrupted, `head -c`): fxtr_next
     * returned 0 there, every record before it read. cut_offset is where the cut record
     * starts, cut_have its bytes there, cut_need the bytes its header declares (0: the cut is
     * inside the header itself). */
    bool cut;
    size_t cut_offset, cut_have, cut_need;
};

void fxtr_init(struct fxtr_reader *r, const void *buf, size_t len);
/* The length of the whole records at the start of buf (a file still being written ends in part
 * of one): record headers' sizes only (FXT spec, "Record header": bits 4-15, 4-35 for large
 * records), nothing else checked. */
size_t fxtr_whole_records(const void *buf, size_t len);
void fxtr_free(struct fxtr_reader *r);
/* A windowed reader (a file read part by part): the next bytes are buf[0..len), buf[0] at file
 * offset `base`; the caller moves the unread bytes of the last window to the front. The reader
 * holds nothing of an earlier window (it copies the strings it keeps). */
void fxtr_rebase(struct fxtr_reader *r, const void *buf, size_t len, size_t base);
/* 1: *rec holds the next record; 0: end of buffer (every byte consumed, or the input ends
 * inside a record: r->cut says so); -1: malformed, err is "offset 0x...: reason" and the reader
 * stays at that record. */
int fxtr_next(struct fxtr_reader *r, struct fxtr_record *rec, struct hv_err *err);

/* An error at the record just returned by fxtr_next (for decoders layered on top): err is
 * "offset 0x...: " followed by the formatted reason. Returns -1. */
int fxtr_record_error(const struct fxtr_record *rec, struct hv_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Is the string equal to the NUL-terminated literal? */
static inline bool fxtr_str_is(struct fxtr_string s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && !memcmp(s.ptr, lit, n);
}

/* Read a whole file into memory (len 0 files give ptr NULL); fxtr_unmap_file frees it. */
int fxtr_map_file(const char *path, const void **ptr, size_t *len, struct hv_err *err);
void fxtr_unmap_file(const void *ptr, size_t len);
