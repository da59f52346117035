/* Code blobs, methods, lines and threads of a JVM (hs_code.h). */
#include "java/hs_code.h"
#include "java/hs_stream.h"

#include <string.h>

static bool rd_int(const struct rt_mem *m, uint64_t va, unsigned width, uint64_t *out)
{
    uint64_t v = 0;
    if (width > 8 || !rt_read(m, va, &v, width))
        return false;
    *out = v;
    return true;
}

int hs_code_cache_read(struct hs_code_cache *cc, const struct hs_layout *l, const struct rt_mem *m,
                       struct hv_err *err)
{
    memset(cc, 0, sizeof(*cc));
    uint64_t heaps, len = 0, data;
    if (!rt_read_u64(m, l->code_low_at, &cc->low) || !rt_read_u64(m, l->code_high_at, &cc->high) ||
        !rt_read_u64(m, l->heaps_at, &heaps) || !heaps ||
        !rd_int(m, heaps + l->growable_len, 4, &len) ||
        !rt_read_u64(m, heaps + l->growable_data, &data))
        return hv_errk(err, HV_ERR_GUEST, "the JVM's code cache is not readable yet");
    if (cc->low >= cc->high || len == 0 || len > HS_MAX_HEAPS)
        return hv_errk(err, HV_ERR_CORRUPT, "the JVM's code cache: %llu heaps in 0x%llx-0x%llx",
                       (unsigned long long)len, (unsigned long long)cc->low,
                       (unsigned long long)cc->high);
    for (unsigned i = 0; i < len; i++) {
        uint64_t h, log2 = 0;
        struct hs_heap *hp = &cc->heap[cc->nheaps];
        if (!rt_read_u64(m, data + 8ull * i, &h) ||
            !rt_read_u64(m, h + l->heap_memory + l->vspace_low, &hp->low) ||
            !rt_read_u64(m, h + l->heap_memory + l->vspace_high, &hp->high) ||
            !rt_read_u64(m, h + l->heap_segmap + l->vspace_low, &hp->segmap) ||
            !rd_int(m, h + l->heap_log2, 4, &log2))
            return hv_errk(err, HV_ERR_GUEST, "the JVM's code heap %u is not readable", i);
        /* HotSpot's segments are 2^6..2^12 bytes (CodeCacheSegmentSize 64 or 128) */
        if (hp->low >= hp->high || hp->low < cc->low || hp->high > cc->high || log2 < 4 ||
            log2 > 16)
            return hv_errk(err, HV_ERR_CORRUPT,
                           "the JVM's code heap %u: 0x%llx-0x%llx, "
                           "segments of 2^%llu",
                           i, (unsigned long long)hp->low, (unsigned long long)hp->high,
                           (unsigned long long)log2);
        hp->log2 = (unsigned)log2;
        cc->nheaps++;
    }
    uint64_t q, buf;
    uint64_t limit = 0;
    if (rt_read_u64(m, l->interp_at, &q) && q && rt_read_u64(m, q + l->stubq_buffer, &buf) &&
        rd_int(m, q + l->stubq_limit, 4, &limit) && limit < (1u << 30)) {
        cc->interp_low = buf;
        cc->interp_high = buf + limit;
    }
    return 0;
}

uint64_t hs_blob_at(const struct hs_code_cache *cc, const struct hs_layout *l,
                    const struct rt_mem *m, uint64_t pc)
{
    for (unsigned i = 0; i < cc->nheaps; i++) {
        const struct hs_heap *h = &cc->heap[i];
        if (pc < h->low || pc >= h->high)
            continue;
        uint64_t seg = (pc - h->low) >> h->log2;
        for (unsigned hop = 0; hop < HS_MAX_SEGMAP_HOPS; hop++) {
            uint8_t back;
            if (!rt_read(m, h->segmap + seg, &back, 1) || back == 0xff)
                return 0; /* unreadable, or a free segment */
            if (!back) {
                uint64_t block = h->low + (seg << h->log2);
                uint8_t used = 0;
                if (!rt_read(m, block + l->block_used, &used, 1) || !used)
                    return 0;
                return block + l->block_size;
            }
            if (back > seg)
                return 0;
            seg -= back;
        }
        return 0;
    }
    return 0;
}

/* A header field of `width` bytes at `off` of the copy hdr (the blob's first HS_BLOB_HEADER). */
static uint64_t hdr_int(const uint8_t *hdr, uint64_t off, unsigned width)
{
    uint64_t v = 0;
    memcpy(&v, hdr + off, width);
    return v;
}

bool hs_blob_read(const struct hs_layout *l, const struct rt_mem *m, uint64_t at, struct hs_blob *b)
{
    memset(b, 0, sizeof(*b));
    b->at = at;
    /* the whole header in one read: the walk reads a blob per frame */
    uint8_t hdr[HS_BLOB_HEADER];
    if (!l->blob_header || l->blob_header > HS_BLOB_HEADER || !rt_read(m, at, hdr, l->blob_header))
        return false;
    b->size = (int32_t)hdr_int(hdr, l->blob_size, 4);
    b->frame_size = (int32_t)hdr_int(hdr, l->blob_frame_size, 4);
    b->frame_complete = (int32_t)hdr_int(hdr, l->blob_frame_complete, l->blob_frame_complete_width);
    if (l->blob_frame_complete_width == 2)
        b->frame_complete = (int16_t)b->frame_complete;
    uint64_t name = hdr_int(hdr, l->blob_name, 8);
    if (b->size <= 0 || b->size > (1 << 28) || b->frame_size < -1 || b->frame_size > 65536)
        return false;
    if (l->blob_code_is_offset) {
        int32_t code = (int32_t)hdr_int(hdr, l->blob_code, 4);
        if (code < 0 || code > b->size)
            return false;
        b->code_begin = at + (uint32_t)code;
    } else {
        b->code_begin = hdr_int(hdr, l->blob_code, 8);
        if (b->code_begin < at || b->code_begin > at + (uint64_t)b->size)
            return false;
    }
    b->code_end = at + (uint64_t)b->size;
    b->name_at = name;
    /* an nmethod's name is "nmethod" (CodeBlob's constructor for it): one read of 8 bytes */
    char nm[8];
    b->is_nmethod = name && rt_read(m, name, nm, 8) && !memcmp(nm, "nmethod", 8);
    if (b->is_nmethod) {
        b->method = hdr_int(hdr, l->nm_method, 8);
        if (l->has_scopes) {
            b->scopes_pcs = (uint32_t)hdr_int(hdr, l->nm_scopes_pcs, 4);
            b->dependencies = (uint32_t)hdr_int(hdr, l->nm_dependencies, 4);
            b->metadata = (uint32_t)hdr_int(hdr, l->nm_metadata, 4);
            b->scopes_data = hdr_int(hdr, l->nm_scopes_data, 8);
        }
    }
    return true;
}

void hs_blob_name(const struct rt_mem *m, const struct hs_blob *b, char *out, size_t cap)
{
    out[0] = 0;
    for (size_t i = 0; b->name_at && i < cap - 1; i++) {
        if (!rt_read(m, b->name_at + i, &out[i], 1) || !out[i]) {
            out[i] = 0;
            return;
        }
        if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
            out[i] = '?';
        out[i + 1] = 0;
    }
}

unsigned hs_blobs_each(const struct hs_code_cache *cc, const struct hs_layout *l,
                       const struct rt_mem *m, unsigned max, bool (*each)(void *ctx, uint64_t blob),
                       void *ctx)
{
    unsigned n = 0;
    for (unsigned i = 0; i < cc->nheaps && n < max; i++) {
        const struct hs_heap *h = &cc->heap[i];
        uint64_t segs = (h->high - h->low) >> h->log2;
        for (uint64_t seg = 0; seg < segs && n < max;) {
            uint64_t block = h->low + (seg << h->log2), length = 0;
            uint8_t used = 0;
            if (!rd_int(m, block + l->block_length, l->block_length_width, &length) ||
                !rt_read(m, block + l->block_used, &used, 1) || !length || length > segs - seg)
                break;
            if (used) {
                n++;
                if (!each(ctx, block + l->block_size))
                    return n;
            }
            seg += length;
        }
    }
    return n;
}

/* A Symbol's text into out (cap), '/' as '.' when dots; false if unreadable. */
static bool symbol_text(const struct hs_layout *l, const struct rt_mem *m, uint64_t sym, char *out,
                        size_t cap, bool dots)
{
    uint64_t len;
    out[0] = 0;
    if (!sym || !rd_int(m, sym + l->symbol_length, 2, &len))
        return false;
    if (len > cap - 1)
        len = cap - 1;
    if (len && !rt_read(m, sym + l->symbol_body, out, len))
        return false;
    out[len] = 0;
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] == 0x7f)
            out[i] = '?';
        else if (dots && out[i] == '/')
            out[i] = '.';
    }
    return true;
}

/* The Symbol* at constant pool index idx (its entries follow the ConstantPool, a word each). */
static uint64_t cp_symbol(const struct hs_layout *l, const struct rt_mem *m, uint64_t cp,
                          uint64_t idx)
{
    uint64_t sym = 0;
    if (!idx || idx > 65535 || !rt_read_u64(m, cp + l->cp_size + 8 * idx, &sym))
        return 0;
    return sym;
}

bool hs_method_read(const struct hs_layout *l, const struct rt_mem *m, uint64_t method,
                    struct hs_method_info *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t cm, cp, holder, kname, name_idx, sig_idx, src_idx = 0, code_size;
    if (!method || !rt_read_u64(m, method + l->method_const, &cm) || !cm ||
        !rt_read_u64(m, cm + l->cm_constants, &cp) || !cp ||
        !rd_int(m, cm + l->cm_name_index, 2, &name_idx) ||
        !rd_int(m, cm + l->cm_signature_index, 2, &sig_idx) ||
        !rd_int(m, cm + l->cm_code_size, 2, &code_size) ||
        !rt_read_u64(m, cp + l->cp_holder, &holder) || !holder ||
        !rt_read_u64(m, holder + l->klass_name, &kname))
        return false;
    if (!symbol_text(l, m, kname, out->klass, sizeof(out->klass), true) ||
        !symbol_text(l, m, cp_symbol(l, m, cp, name_idx), out->name, sizeof(out->name), false) ||
        !out->name[0])
        return false;
    symbol_text(l, m, cp_symbol(l, m, cp, sig_idx), out->signature, sizeof(out->signature), false);
    if (rd_int(m, cp + l->cp_source_file, 2, &src_idx) && src_idx)
        symbol_text(l, m, cp_symbol(l, m, cp, src_idx), out->source, sizeof(out->source), false);
    out->code_base = cm + l->cm_size;
    out->code_size = (uint32_t)code_size;
    return true;
}

#define HS_MAX_LINE_PAIRS 65536

int hs_method_line(const struct hs_layout *l, const struct rt_mem *m, uint64_t method, int bci)
{
    uint64_t cm, flags, code_size;
    if (!rt_read_u64(m, method + l->method_const, &cm) || !cm ||
        !rd_int(m, cm + l->cm_flags, l->cm_flags_width, &flags) || !(flags & l->cm_has_lines) ||
        !rd_int(m, cm + l->cm_code_size, 2, &code_size) || bci < 0 || (uint64_t)bci >= code_size)
        return -1;
    /* CompressedLineNumberReadStream: bytes of (bci delta << 3 | line delta), or 0xFF and two
     * signed ints; a 0 ends it. */
    uint64_t table = cm + l->cm_size + code_size;
    /* the table cannot run past 5 bytes a pair for every bytecode and the end */
    struct hs_stream s = {
        .m = m, .at = table, .end = table + 11 * (code_size + 1), .excluded = l->stream_excluded};
    int32_t pc = 0, line = 0;
    int best_pc = 0, best = -1;
    for (unsigned i = 0; i < HS_MAX_LINE_PAIRS; i++) {
        uint8_t b;
        if (!hs_stream_byte(&s, &b))
            return -1;
        if (!b)
            break;
        if (b == 0xff) {
            int32_t dpc, dline;
            if (!hs_stream_signed(&s, &dpc) || !hs_stream_signed(&s, &dline))
                return -1;
            /* hostile deltas wrap rather than overflow; a table past 2^31 is no table */
            pc = (int32_t)((uint32_t)pc + (uint32_t)dpc);
            line = (int32_t)((uint32_t)line + (uint32_t)dline);
        } else {
            pc += b >> 3;
            line += b & 7;
        }
        /* Method::line_from_bci: the entry at bci, else the latest one before it */
        if (pc == bci)
            return line;
        if (pc < bci && pc >= best_pc) {
            best_pc = pc;
            best = line;
        }
    }
    return best;
}

unsigned hs_threads(const struct hs_layout *l, const struct rt_mem *m, struct hs_thread *out,
                    unsigned max)
{
    uint64_t list, len, arr;
    if (!rt_read_u64(m, l->threads_at, &list) || !list ||
        !rd_int(m, list + l->tl_length, 4, &len) || !rt_read_u64(m, list + l->tl_threads, &arr))
        return 0;
    if (len > HS_MAX_THREADS)
        len = HS_MAX_THREADS;
    unsigned n = 0;
    for (uint64_t i = 0; i < len && n < max; i++) {
        uint64_t jt, os, tid;
        if (!rt_read_u64(m, arr + 8 * i, &jt) || !jt || !rt_read_u64(m, jt + l->jt_osthread, &os) ||
            !os || !rd_int(m, os + l->os_tid, 4, &tid))
            continue;
        out[n].jt = jt;
        out[n].tid = (int32_t)tid;
        n++;
    }
    return n;
}
