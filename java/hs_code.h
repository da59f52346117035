/* A JVM's code and methods read from outside (docs/java.md): which code blob holds a pc (the
 * code cache's heaps and their segment maps, as CodeHeap::find_blob does), a blob's name, code
 * range, frame size and, for an nmethod, its Method*; a Method*'s class, name, signature and
 * source file from its constant pool's symbols, a bytecode index's line from its compressed
 * line number table; the JVM's threads by kernel tid. Every read bounded, every string cut to
 * its buffer; nothing allocates, so the exit path may call what it needs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "java/hs_layout.h"

#define HS_MAX_HEAPS       8    /* CodeCache has 3 with segmented code cache, 1 without */
#define HS_MAX_SEGMAP_HOPS 4096 /* back-links a segment map walk follows to a block's start */

struct hs_heap {
    uint64_t low, high, segmap;
    unsigned log2;
};

struct hs_code_cache {
    uint64_t low, high; /* CodeCache::_low_bound, _high_bound: every heap within */
    struct hs_heap heap[HS_MAX_HEAPS];
    unsigned nheaps;
    uint64_t interp_low, interp_high; /* the template interpreter's code */
};

/* The code cache's heaps, read once per JVM (their reserved ranges never move). */
int hs_code_cache_read(struct hs_code_cache *cc, const struct hs_layout *l, const struct rt_mem *m,
                       struct hv_err *err);

static inline bool hs_in_code_cache(const struct hs_code_cache *cc, uint64_t pc)
{
    return pc >= cc->low && pc < cc->high;
}

#define HS_BLOB_HEADER 1024 /* bytes of a blob's header read at once (hs_layout.blob_header) */

struct hs_blob {
    uint64_t at, code_begin, code_end;
    int32_t size, frame_size; /* bytes; frame_size in words (-1: a blob with no frame) */
    bool is_nmethod;
    int32_t frame_complete; /* the prologue's end, from code_begin */
    uint64_t method;        /* an nmethod's Method* */
    /* an nmethod's debug information (hs_layout.has_scopes): offsets from the blob, an address */
    uint32_t scopes_pcs, dependencies, metadata;
    uint64_t scopes_data;
    uint64_t name_at; /* its name's address (hs_blob_name) */
};

/* The blob holding pc (0: none, a free block, or unreadable). */
uint64_t hs_blob_at(const struct hs_code_cache *cc, const struct hs_layout *l,
                    const struct rt_mem *m, uint64_t pc);
bool hs_blob_read(const struct hs_layout *l, const struct rt_mem *m, uint64_t at,
                  struct hs_blob *b);
/* A blob's name ("nmethod", "Interpreter", "StubRoutines (1)", an adapter's "I2C/C2I adapters")
 * into out, cut to cap, unprintable bytes as '?'. */
void hs_blob_name(const struct rt_mem *m, const struct hs_blob *b, char *out, size_t cap);
/* Every used block of every heap, in address order, until each returns false; at most `max`. */
unsigned hs_blobs_each(const struct hs_code_cache *cc, const struct hs_layout *l,
                       const struct rt_mem *m, unsigned max, bool (*each)(void *ctx, uint64_t blob),
                       void *ctx);

struct hs_method_info {
    char klass[256];     /* "java.lang.String", '/' read as '.' */
    char name[128];      /* "indexOf" */
    char signature[256]; /* "(II)I" */
    char source[128];    /* "String.java", "" when the class has none */
    uint64_t code_base;  /* its bytecodes' address */
    uint32_t code_size;
};

bool hs_method_read(const struct hs_layout *l, const struct rt_mem *m, uint64_t method,
                    struct hs_method_info *out);
/* The source line of bytecode index bci (-1: no line table, or none that covers it). */
int hs_method_line(const struct hs_layout *l, const struct rt_mem *m, uint64_t method, int bci);

struct hs_thread {
    uint64_t jt; /* JavaThread* */
    int32_t tid; /* the kernel's */
};
#define HS_MAX_THREADS 65536
/* The JVM's Java threads now (ThreadsSMRSupport's list): at most max. */
unsigned hs_threads(const struct hs_layout *l, const struct rt_mem *m, struct hs_thread *out,
                    unsigned max);
