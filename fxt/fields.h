/* Typed bit fields of FXT words (the idea of Fuchsia lib/fxt's Field<lo, hi>, written here in C).
 * A field is written FXT_FIELD(lo, hi) with both bit numbers inclusive, exactly as the FXT spec
 * ("Encoding primitives": `[lsb .. msb]`) writes them, so each definition below can be checked
 * against the spec line by line. FXT_MAKE(field, value) shifts a value into place (bits of the
 * value outside the field are dropped), FXT_GET(field, word) extracts it.
 *
 * This header is the WRITER's view. The reader (fxt/reader.c) deliberately has its own
 * definitions, written independently from the spec, so a shared mistake cannot hide. */
#pragma once

#include <stdint.h>

#define FXT_FIELD(lo, hi) lo, hi

static inline uint64_t fxt_field_mask(unsigned lo, unsigned hi)
{
    return (hi - lo >= 63) ? ~0ull : ((1ull << (hi - lo + 1)) - 1);
}

static inline uint64_t fxt_field_make(unsigned lo, unsigned hi, uint64_t v)
{
    return (v & fxt_field_mask(lo, hi)) << lo;
}

static inline uint64_t fxt_field_get(uint64_t w, unsigned lo, unsigned hi)
{
    return (w >> lo) & fxt_field_mask(lo, hi);
}

#define FXT_MAKE_(...)   fxt_field_make(__VA_ARGS__)
#define FXT_MAKE(f, v)   FXT_MAKE_(f, (uint64_t)(v))
#define FXT_GET_(w, ...) fxt_field_get((w), __VA_ARGS__)
#define FXT_GET(f, w)    FXT_GET_((w), f)
#define FXT_MAX_(lo, hi) fxt_field_mask(lo, hi)
#define FXT_MAX(f)       FXT_MAX_(f) /* largest value the field holds */

/* Record header, FXT spec "Record header" (FXT spec "Record header"). */
#define FXT_REC_TYPE         FXT_FIELD(0, 3)
#define FXT_REC_SIZE         FXT_FIELD(4, 15) /* words, including the header */
#define FXT_MAX_RECORD_WORDS 4095u            /* 12-bit size; Perfetto frames every record by it */
#define FXT_LARGE_REC_SIZE   FXT_FIELD(4, 35) /* large records (type 15): 32-bit size */

/* Size in words of the record whose header is h, 0 for a malformed header. */
static inline uint64_t fxt_record_words(uint64_t h);

enum fxt_record_type {
    FXT_RT_METADATA = 0,
    FXT_RT_INIT = 1,
    FXT_RT_STRING = 2,
    FXT_RT_THREAD = 3,
    FXT_RT_EVENT = 4,
    FXT_RT_BLOB = 5,
    FXT_RT_USER_OBJECT = 6,
    FXT_RT_KERNEL_OBJECT = 7,
    FXT_RT_SCHEDULER = 8,
    FXT_RT_LOG = 9,
    FXT_RT_LARGE = 15,
};

static inline uint64_t fxt_record_words(uint64_t h)
{
    return FXT_GET(FXT_REC_TYPE, h) == FXT_RT_LARGE ? FXT_GET(FXT_LARGE_REC_SIZE, h)
                                                    : FXT_GET(FXT_REC_SIZE, h);
}

/* Metadata record (type 0), FXT spec "Metadata record". */
#define FXT_META_TYPE      FXT_FIELD(16, 19)
#define FXT_META_PROVIDER  FXT_FIELD(20, 51)
#define FXT_META_NAME_LEN  FXT_FIELD(52, 59) /* provider info */
#define FXT_META_EVENT_ID  FXT_FIELD(52, 55) /* provider event */
#define FXT_META_TRACEINFO FXT_FIELD(20, 23)
#define FXT_META_MAGIC     FXT_FIELD(24, 55)
enum {
    FXT_META_PROVIDER_INFO = 1,
    FXT_META_PROVIDER_SECTION = 2,
    FXT_META_PROVIDER_EVENT = 3,
    FXT_META_TRACE_INFO = 4
};
#define FXT_MAGIC_VALUE 0x16547846u
#define FXT_MAGIC_RECORD                                                                           \
    0x0016547846040010ull /* the whole magic word, FXT spec "Metadata record" */
#define FXT_PROVIDER_NAME_MAX 0xffu

/* String record (type 2), FXT spec "String record". */
#define FXT_STRING_INDEX     FXT_FIELD(16, 30)
#define FXT_STRING_LEN       FXT_FIELD(32, 46)
#define FXT_STRING_INDEX_MAX 0x7fffu
#define FXT_STRING_LEN_MAX   0x7fffu

/* Thread record (type 3), FXT spec "Thread record". */
#define FXT_THREAD_INDEX     FXT_FIELD(16, 23)
#define FXT_THREAD_INDEX_MAX 0xffu

/* Event record (type 4), FXT spec "Event record". */
#define FXT_EVENT_TYPE   FXT_FIELD(16, 19)
#define FXT_EVENT_NARGS  FXT_FIELD(20, 23)
#define FXT_EVENT_THREAD FXT_FIELD(24, 31)
#define FXT_EVENT_CAT    FXT_FIELD(32, 47)
#define FXT_EVENT_NAME   FXT_FIELD(48, 63)

/* Argument header, FXT spec "Arguments". */
#define FXT_ARGF_TYPE      FXT_FIELD(0, 3)
#define FXT_ARGF_SIZE      FXT_FIELD(4, 15)
#define FXT_ARGF_NAME      FXT_FIELD(16, 31)
#define FXT_ARGF_VALUE32   FXT_FIELD(32, 63)
#define FXT_ARGF_STR_VALUE FXT_FIELD(32, 47)
#define FXT_ARGF_BOOL      FXT_FIELD(32, 32)

/* Blob record (type 5), FXT spec "Blob record". */
#define FXT_BLOB_NAME FXT_FIELD(16, 31)
#define FXT_BLOB_SIZE FXT_FIELD(32, 46) /* payload bytes, 15 bits */
#define FXT_BLOB_TYPE FXT_FIELD(48, 55)

/* Kernel object record (type 7), FXT spec "Kernel object record". */
#define FXT_KOBJ_TYPE  FXT_FIELD(16, 23)
#define FXT_KOBJ_NAME  FXT_FIELD(24, 39)
#define FXT_KOBJ_NARGS FXT_FIELD(40, 43)
enum { FXT_OBJ_PROCESS = 1, FXT_OBJ_THREAD = 2, FXT_OBJ_JOB = 17 }; /* ZX_OBJ_TYPE_* */

/* String ref (16 bits), FXT spec "Encoding primitives": 0 empty, MSB clear = index, MSB set =
 * inline length. */
#define FXT_STRREF_INLINE 0x8000u
