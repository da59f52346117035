/* What the Java reader needs of one JVM, resolved once from its VMStructs tables
 * (hs_vmstructs.h) and checked (docs/java.md, "What is read"): the code cache's heaps and how a
 * pc finds its code blob, a blob's name, size and frame, an nmethod's Method*, the path from a
 * Method* to its class, name, signature, source file and line table, the JVM's threads with
 * their kernel tids and last-Java-frame anchors.
 *
 * Where JDKs name a field differently the resolver takes the first name a table has
 * (CompiledMethod::_method in 17, nmethod::_method from 23; CodeBlob::_code_begin, an address,
 * in 17, CodeBlob::_code_offset, an int from the blob, later). Nothing here is a per-build
 * offset written in hvprof: the one fact not in the tables, the interpreter frame's slots, is
 * x86-64's frame_x86.hpp, checked against the two slots the tables do publish. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "java/hs_vmstructs.h"

struct hs_layout {
    char release[40]; /* Abstract_VM_Version::_s_vm_release, "17.0.15+6-Debian-1deb12u1" */
    unsigned major;   /* its feature number: 17, 21, 25 */

    /* the code cache: statics' addresses (read them for the values) */
    uint64_t code_low_at, code_high_at, heaps_at;
    uint64_t growable_len, growable_data;           /* GrowableArray<CodeHeap*> */
    uint64_t heap_memory, heap_segmap, heap_log2;   /* CodeHeap */
    uint64_t vspace_low, vspace_high;               /* VirtualSpace */
    uint64_t block_size, block_length, block_used;  /* HeapBlock and its header */
    unsigned block_length_width;                    /* 8 (size_t, 17) or 4 (25) */
    uint64_t blob_name, blob_size, blob_frame_size; /* CodeBlob */
    uint64_t blob_code;                             /* _code_begin or _code_offset */
    bool blob_code_is_offset;                       /* an int from the blob */
    uint64_t nm_method;                             /* nmethod's Method* */
    uint64_t blob_frame_complete;                   /* CodeBlob::_frame_complete_offset */
    unsigned blob_frame_complete_width;
    uint64_t call_stub_return_at; /* StubRoutines::_call_stub_return_address: Java's entry */
    /* An nmethod's debug information (JDK 17 to 22: offsets from the blob, the scopes' data an
     * address in CompiledMethod); has_scopes false where the tables lack it: a compiled frame is
     * then its outermost method only (docs/java.md). */
    bool has_scopes;
    uint64_t nm_scopes_pcs, nm_dependencies, nm_metadata, nm_scopes_data;
    uint64_t pcdesc_size, pcdesc_pc, pcdesc_scope;
    uint64_t blob_header;     /* bytes of a blob's header that hold every field above */
    unsigned stream_excluded; /* the compressed streams' excluded byte: 0 to JDK 19, 1 from 20 */

    /* the interpreter's code: AbstractInterpreter::_code, a StubQueue */
    uint64_t interp_at, stubq_buffer, stubq_limit;
    /* x86-64 interpreter frame slots, in words from its fp (frame_x86.hpp) */
    int frame_method, frame_bcp;

    /* Method* to names and lines */
    uint64_t method_const; /* Method::_constMethod */
    uint64_t cm_constants, cm_code_size, cm_name_index, cm_signature_index, cm_flags;
    uint64_t cm_size;                                /* sizeof(ConstMethod) */
    uint64_t cm_has_lines;                           /* its flag bit */
    unsigned cm_flags_width;                         /* 2 (17) or 4 (21+) */
    uint64_t cp_holder, cp_source_file, cp_size;     /* ConstantPool */
    uint64_t klass_name, symbol_length, symbol_body; /* Klass, Symbol */

    /* threads */
    uint64_t threads_at, tl_length, tl_threads;        /* ThreadsSMRSupport, ThreadsList */
    uint64_t jt_anchor, jt_osthread, jt_state, os_tid; /* JavaThread, OSThread */
    uint64_t anchor_sp, anchor_pc, anchor_fp;          /* JavaFrameAnchor */
};

/* Resolve and check: -1 with err naming the first entry missing (HV_ERR_UNSUPPORTED: a JVM
 * whose tables lack what the reader needs) or the version string unreadable (HV_ERR_GUEST). */
int hs_layout_resolve(struct hs_layout *l, const struct hs_vmstructs *vs, const struct rt_mem *m,
                      struct hv_err *err);
