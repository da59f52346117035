/* The Java walk (hs_walk.h). Frames on x86-64 HotSpot (frame_x86.hpp, frame_x86.inline.hpp):
 *   interpreted  a rbp frame: the return pc at fp+8, the caller's fp at fp, its sp fp+16, the
 *                Method* and bcp in the slots below fp (hs_layout's frame_method, frame_bcp);
 *   compiled     no frame pointer: the frame is CodeBlob::_frame_size words from sp, the return
 *                pc its last word and the caller's rbp the one before (until the prologue has
 *                built it, CodeBlob::_frame_complete_offset, the return pc is at sp);
 *   a stub       with a frame size as compiled, with none (-1) a rbp frame. */
#include "java/hs_walk.h"

#include <string.h>

#include "java/hs_stream.h"

/* The PcDesc of pc: its exact one (a return address: a call's), or, for the sampled pc, the
 * first at or after it (as HotSpot's approximate lookup). Returns its scope decode offset, -1. */
static int64_t pc_desc(const struct hs_layout *l, const struct rt_mem *m, const struct hs_blob *b,
                       uint64_t pc, bool exact)
{
    uint64_t pcs = b->scopes_pcs, end = b->dependencies;
    if (pcs >= end || end > (uint64_t)b->size || (end - pcs) / l->pcdesc_size > 65536)
        return -1;
    /* PcDescs are written in pc order (DebugInformationRecorder::add_new_pc_offset asserts it):
     * a binary search for the first at or after pc, past the sentinel (-1) before them */
    int64_t off = (int64_t)(pc - b->code_begin);
    uint64_t lo = 0, hi = (end - pcs) / l->pcdesc_size;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int32_t po;
        if (!rt_read(m, b->at + pcs + mid * l->pcdesc_size + l->pcdesc_pc, &po, 4))
            return -1;
        if (po < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t po, so;
    if (lo >= (end - pcs) / l->pcdesc_size ||
        !rt_read(m, b->at + pcs + lo * l->pcdesc_size + l->pcdesc_pc, &po, 4) ||
        !rt_read(m, b->at + pcs + lo * l->pcdesc_size + l->pcdesc_scope, &so, 4))
        return -1;
    if (po < 0 || (exact && po != off))
        return -1;
    return so;
}

unsigned hs_scopes(const struct hs_layout *l, const struct rt_mem *m, const struct hs_blob *b,
                   uint64_t pc, bool exact, struct hs_frame *out, unsigned max)
{
    if (!l->has_scopes || !max)
        return 0;
    int64_t decode = pc_desc(l, m, b, pc, exact);
    uint64_t data = b->scopes_data, meta = b->metadata;
    if (decode <= 0 || !data || meta >= (uint64_t)b->size)
        return 0;
    unsigned n = 0;
    /* ScopeDesc::decode_body: the sender's offset, the method's metadata index, the bci
     * (+ InvocationEntryBci, -1); serialized_null (0) ends the chain */
    while (decode > 0 && n < max && n < HS_MAX_SCOPES) {
        struct hs_stream s = {.m = m,
                              .at = data + (uint64_t)decode,
                              .end = data + (uint64_t)decode + 15,
                              .excluded = l->stream_excluded};
        uint32_t sender, index, bci;
        if (!hs_stream_int(&s, &sender) || !hs_stream_int(&s, &index) || !hs_stream_int(&s, &bci) ||
            !index || index > 65536)
            break;
        uint64_t method;
        if (!rt_read_u64(m, b->at + meta + 8ull * (index - 1), &method) || !method)
            break;
        out[n].kind = HS_FRAME_INLINED;
        out[n].code = method;
        out[n].bci = (int32_t)bci - 1;
        n++;
        if ((int64_t)sender >= decode)
            break; /* a sender is written before its callee: no loop */
        decode = sender;
    }
    if (n)
        out[n - 1].kind = HS_FRAME_COMPILED;
    return n;
}

#define HS_MAX_WALK 256 /* frames a walk steps through, its writes bounded by max */

unsigned hs_walk(const struct hs_code_cache *cc, const struct hs_layout *l, const struct rt_mem *m,
                 struct hs_regs *r, struct hs_frame *out, unsigned max)
{
    unsigned n = 0;
    uint64_t stub_ret = 0;
    rt_read_u64(m, l->call_stub_return_at, &stub_ret);
    uint64_t pc = r->pc, sp = r->sp, fp = r->fp;
    for (unsigned step = 0; step < HS_MAX_WALK && n < max; step++) {
        bool leaf = step == 0;
        uint64_t ret, nsp, nfp;
        if (pc >= cc->interp_low && pc < cc->interp_high) {
            uint64_t method = 0, bcp = 0, cm;
            rt_read_u64(m, fp + 8 * (int64_t)l->frame_method, &method);
            rt_read_u64(m, fp + 8 * (int64_t)l->frame_bcp, &bcp);
            int32_t bci = -1;
            if (method && rt_read_u64(m, method + l->method_const, &cm) && cm &&
                bcp >= cm + l->cm_size && bcp - (cm + l->cm_size) < 65536)
                bci = (int32_t)(bcp - (cm + l->cm_size));
            out[n++] = (struct hs_frame){HS_FRAME_INTERPRETED, bci, method};
            if (!rt_read_u64(m, fp + 8, &ret) || !rt_read_u64(m, fp, &nfp))
                break;
            nsp = fp + 16;
        } else if (hs_in_code_cache(cc, pc)) {
            struct hs_blob b;
            uint64_t at = hs_blob_at(cc, l, m, pc);
            if (!at || !hs_blob_read(l, m, at, &b) || pc < b.code_begin || pc >= b.code_end)
                break;
            if (pc == stub_ret)
                break; /* the call stub: Java was entered from native code here */
            if (b.is_nmethod) {
                unsigned k = hs_scopes(l, m, &b, pc, !leaf, out + n, max - n);
                if (!k)
                    out[n++] = (struct hs_frame){HS_FRAME_COMPILED, -1, b.method};
                n += k;
            } else {
                out[n++] = (struct hs_frame){HS_FRAME_STUB, -1, at};
            }
            if (b.frame_size <= 0) {
                if (!rt_read_u64(m, fp + 8, &ret) || !rt_read_u64(m, fp, &nfp))
                    break;
                nsp = fp + 16;
            } else if (leaf && b.frame_complete > 0 &&
                       pc < b.code_begin + (uint64_t)b.frame_complete) {
                if (!rt_read_u64(m, sp, &ret))
                    break;
                nsp = sp + 8;
                nfp = fp;
            } else {
                nsp = sp + 8ull * (uint64_t)b.frame_size;
                if (!rt_read_u64(m, nsp - 8, &ret) || !rt_read_u64(m, nsp - 16, &nfp))
                    break;
            }
        } else {
            break;
        }
        if (nsp <= sp)
            break; /* stacks grow down: a caller's frame is above */
        pc = ret;
        sp = nsp;
        fp = nfp;
        if (pc == stub_ret) {
            /* the call stub's own rbp frame, to JavaCalls::call_helper that made it */
            if (!rt_read_u64(m, fp + 8, &ret) || !rt_read_u64(m, fp, &nfp))
                break;
            r->pc = ret;
            r->sp = fp + 16;
            r->fp = nfp;
            return n;
        }
        if (!(hs_in_code_cache(cc, pc) || (pc >= cc->interp_low && pc < cc->interp_high))) {
            r->pc = pc;
            r->sp = sp;
            r->fp = fp;
            return n;
        }
    }
    r->pc = 0;
    return n;
}
