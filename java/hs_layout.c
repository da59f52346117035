/* One JVM's layout resolved from its tables (hs_layout.h): each entry looked up by the names
 * the JDKs give it, the first missing one named in the error. */
#include "java/hs_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Looks up go through one context so that the first failure is the one reported. */
struct resolver {
    const struct hs_vmstructs *vs;
    struct hv_err *err;
    bool failed;
};

static void missing(struct resolver *r, const char *what)
{
    if (!r->failed)
        hv_errk(r->err, HV_ERR_UNSUPPORTED, "this JVM's VMStructs have no %s", what);
    r->failed = true;
}

/* The offset of the first of up to three "Type::field" names the tables have. */
static uint64_t off(struct resolver *r, const char *a, const char *b, const char *c)
{
    const char *names[3] = {a, b, c};
    for (int i = 0; i < 3 && names[i]; i++) {
        char type[HS_MAX_NAME];
        snprintf(type, sizeof(type), "%s", names[i]);
        char *sep = strstr(type, "::_");
        if (!sep)
            continue;
        *sep = 0;
        uint64_t v;
        if (hs_offset(r->vs, type, sep + 2, &v))
            return v;
    }
    missing(r, a);
    return 0;
}

static uint64_t stat_at(struct resolver *r, const char *type, const char *field)
{
    uint64_t v;
    if (hs_static(r->vs, type, field, &v) && v)
        return v;
    char what[HS_MAX_NAME * 2];
    snprintf(what, sizeof(what), "static %s::%s", type, field);
    missing(r, what);
    return 0;
}

static uint64_t size_of(struct resolver *r, const char *type)
{
    uint64_t v;
    if (hs_type_size(r->vs, type, &v) && v && v < 65536)
        return v;
    char what[HS_MAX_NAME + 16];
    snprintf(what, sizeof(what), "type %s", type);
    missing(r, what);
    return 0;
}

/* The width of a field's integer type (2, 4 or 8), from its type string's own size. */
static unsigned width_of(struct resolver *r, const char *type, const char *field,
                         const char *alt_type, const char *alt_field)
{
    const char *t = hs_field_type(r->vs, type, field);
    if (!t && alt_type)
        t = hs_field_type(r->vs, alt_type, alt_field);
    uint64_t n;
    if (t && hs_type_size(r->vs, t, &n) && (n == 1 || n == 2 || n == 4 || n == 8))
        return (unsigned)n;
    char what[HS_MAX_NAME * 2];
    snprintf(what, sizeof(what), "integer type for %s::%s", type, field);
    missing(r, what);
    return 0;
}

static int64_t constant(struct resolver *r, const char *a, const char *b)
{
    int64_t v;
    if (hs_int_constant(r->vs, a, &v) || (b && hs_int_constant(r->vs, b, &v)))
        return v;
    missing(r, a);
    return 0;
}

/* The interpreter frame's method and bcp slots, in words from fp: frame_x86.hpp of JDK 17 to
 * 25 (sender_sp -1, last_sp -2, method -3, mirror -4, mdp -5, cache -6, locals -7, bcp -8).
 * The tables publish sender_sp's and last_sp's; a JVM whose two differ is another layout. */
static void frame_slots(struct resolver *r, struct hs_layout *l)
{
    int64_t sender, last;
    if (!hs_int_constant(r->vs, "frame::interpreter_frame_sender_sp_offset", &sender) ||
        !hs_int_constant(r->vs, "frame::interpreter_frame_last_sp_offset", &last) || sender != -1 ||
        last != -2) {
        missing(r, "x86-64 interpreter frame (frame::interpreter_frame_sender_sp_offset -1, "
                   "last_sp_offset -2)");
        return;
    }
    l->frame_method = -3;
    l->frame_bcp = -8;
}

int hs_layout_resolve(struct hs_layout *l, const struct hs_vmstructs *vs, const struct rt_mem *m,
                      struct hv_err *err)
{
    memset(l, 0, sizeof(*l));
    struct resolver r = {vs, err, false};

    uint64_t rel = stat_at(&r, "Abstract_VM_Version", "_s_vm_release"), str;
    if (r.failed)
        return -1;
    if (!rt_read_u64(m, rel, &str) || !str || !rt_read(m, str, l->release, 8))
        return hv_errk(err, HV_ERR_GUEST, "the JVM's version string is not readable yet");
    /* the rest of it, a byte at a time up to its end or the buffer's */
    for (size_t i = 8; i < sizeof(l->release) - 1 && memchr(l->release, 0, i) == NULL; i++)
        if (!rt_read(m, str + i, &l->release[i], 1))
            l->release[i] = 0;
    l->release[sizeof(l->release) - 1] = 0;
    l->major = (unsigned)strtoul(l->release, NULL, 10); /* "17.0.15+6" and "25+36" alike */
    if (l->major < 9 || l->major > 99)
        return hv_errk(err, HV_ERR_UNSUPPORTED, "a JVM of version '%s' (17 and later are read)",
                       l->release);

    l->code_low_at = stat_at(&r, "CodeCache", "_low_bound");
    l->code_high_at = stat_at(&r, "CodeCache", "_high_bound");
    l->heaps_at = stat_at(&r, "CodeCache", "_heaps");
    l->growable_len = off(&r, "GrowableArrayBase::_len", NULL, NULL);
    l->growable_data = off(&r, "GrowableArray<int>::_data", NULL, NULL);
    l->heap_memory = off(&r, "CodeHeap::_memory", NULL, NULL);
    l->heap_segmap = off(&r, "CodeHeap::_segmap", NULL, NULL);
    l->heap_log2 = off(&r, "CodeHeap::_log2_segment_size", NULL, NULL);
    l->vspace_low = off(&r, "VirtualSpace::_low", NULL, NULL);
    l->vspace_high = off(&r, "VirtualSpace::_high", NULL, NULL);
    l->block_size = size_of(&r, "HeapBlock");
    l->block_length = off(&r, "HeapBlock::_header", NULL, NULL) +
                      off(&r, "HeapBlock::Header::_length", NULL, NULL);
    l->block_length_width = width_of(&r, "HeapBlock::Header", "_length", NULL, NULL);
    l->block_used =
        off(&r, "HeapBlock::_header", NULL, NULL) + off(&r, "HeapBlock::Header::_used", NULL, NULL);
    l->blob_name = off(&r, "CodeBlob::_name", NULL, NULL);
    l->blob_size = off(&r, "CodeBlob::_size", NULL, NULL);
    l->blob_frame_size = off(&r, "CodeBlob::_frame_size", NULL, NULL);
    uint64_t v;
    if (hs_offset(vs, "CodeBlob", "_code_begin", &v)) {
        l->blob_code = v;
    } else {
        l->blob_code = off(&r, "CodeBlob::_code_offset", NULL, NULL);
        l->blob_code_is_offset = true;
    }
    l->nm_method = off(&r, "nmethod::_method", "CompiledMethod::_method", NULL);

    l->blob_frame_complete = off(&r, "CodeBlob::_frame_complete_offset", NULL, NULL);
    l->blob_frame_complete_width = width_of(&r, "CodeBlob", "_frame_complete_offset", NULL, NULL);
    l->call_stub_return_at = stat_at(&r, "StubRoutines", "_call_stub_return_address");
    /* UNSIGNED5 with its zero byte excluded replaced CompressedReadStream's own coding in
     * JDK 20 (JDK-8292758) */
    l->stream_excluded = l->major >= 20 ? 1 : 0;
    l->has_scopes = hs_offset(vs, "nmethod", "_scopes_pcs_offset", &l->nm_scopes_pcs) &&
                    hs_offset(vs, "nmethod", "_dependencies_offset", &l->nm_dependencies) &&
                    hs_offset(vs, "nmethod", "_metadata_offset", &l->nm_metadata) &&
                    hs_offset(vs, "CompiledMethod", "_scopes_data_begin", &l->nm_scopes_data) &&
                    hs_type_size(vs, "PcDesc", &l->pcdesc_size) && l->pcdesc_size >= 8 &&
                    l->pcdesc_size <= 64 && hs_offset(vs, "PcDesc", "_pc_offset", &l->pcdesc_pc) &&
                    hs_offset(vs, "PcDesc", "_scope_decode_offset", &l->pcdesc_scope);

    /* every blob field read lies in the header read at once */
    const uint64_t ends[] = {
        l->blob_name + 8,       l->blob_size + 4,
        l->blob_frame_size + 4, l->blob_code + 8,
        l->nm_method + 8,       l->blob_frame_complete + l->blob_frame_complete_width,
        l->nm_scopes_pcs + 4,   l->nm_dependencies + 4,
        l->nm_metadata + 4,     l->nm_scopes_data + 8};
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
        if (ends[i] > l->blob_header)
            l->blob_header = ends[i];
    if (!r.failed && l->blob_header > 1024)
        missing(&r, "code blob header within 1024 bytes");

    l->interp_at = stat_at(&r, "AbstractInterpreter", "_code");
    l->stubq_buffer = off(&r, "StubQueue::_stub_buffer", NULL, NULL);
    l->stubq_limit = off(&r, "StubQueue::_buffer_limit", NULL, NULL);
    frame_slots(&r, l);

    l->method_const = off(&r, "Method::_constMethod", NULL, NULL);
    l->cm_constants = off(&r, "ConstMethod::_constants", NULL, NULL);
    l->cm_code_size = off(&r, "ConstMethod::_code_size", NULL, NULL);
    l->cm_name_index = off(&r, "ConstMethod::_name_index", NULL, NULL);
    l->cm_signature_index = off(&r, "ConstMethod::_signature_index", NULL, NULL);
    l->cm_flags = off(&r, "ConstMethod::_flags", "ConstMethod::_flags._flags", NULL);
    l->cm_flags_width = width_of(&r, "ConstMethod", "_flags", "ConstMethod", "_flags._flags");
    l->cm_has_lines = (uint64_t)constant(&r, "ConstMethod::_has_linenumber_table",
                                         "ConstMethodFlags::_misc_has_linenumber_table");
    l->cm_size = size_of(&r, "ConstMethod");
    l->cp_holder = off(&r, "ConstantPool::_pool_holder", NULL, NULL);
    l->cp_source_file = off(&r, "ConstantPool::_source_file_name_index", NULL, NULL);
    l->cp_size = size_of(&r, "ConstantPool");
    l->klass_name = off(&r, "Klass::_name", NULL, NULL);
    l->symbol_length = off(&r, "Symbol::_length", NULL, NULL);
    l->symbol_body = off(&r, "Symbol::_body", NULL, NULL);

    l->threads_at = stat_at(&r, "ThreadsSMRSupport", "_java_thread_list");
    l->tl_length = off(&r, "ThreadsList::_length", NULL, NULL);
    l->tl_threads = off(&r, "ThreadsList::_threads", NULL, NULL);
    l->jt_anchor = off(&r, "JavaThread::_anchor", NULL, NULL);
    l->jt_osthread = off(&r, "JavaThread::_osthread", "Thread::_osthread", NULL);
    l->jt_state = off(&r, "JavaThread::_thread_state", NULL, NULL);
    l->os_tid = off(&r, "OSThread::_thread_id", NULL, NULL);
    l->anchor_sp = off(&r, "JavaFrameAnchor::_last_Java_sp", NULL, NULL);
    l->anchor_pc = off(&r, "JavaFrameAnchor::_last_Java_pc", NULL, NULL);
    l->anchor_fp = off(&r, "JavaFrameAnchor::_last_Java_fp", NULL, NULL);
    if (!r.failed && (l->cm_flags_width != 2 && l->cm_flags_width != 4))
        missing(&r, "ConstMethod::_flags of 2 or 4 bytes");
    return r.failed ? -1 : 0;
}
