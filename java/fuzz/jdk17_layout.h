/* JDK 17's layout as Debian 12's libjvm publishes it (test_java_live reads the same values from
 * the live tables), its statics at the start of an image at BASE: the fuzzer's and the image
 * test's fixed JVM (java/fuzz/corpus/fuzz_java_walk). */
#pragma once

#include "java/hs_layout.h"

#define HS_IMAGE_BASE 0x10000000ull

/* JDK 17's offsets as Debian 12's libjvm publishes them (test_java_live prints them). */
static inline struct hs_layout hs_jdk17_layout(uint64_t BASE)
{
    return (struct hs_layout){
        .release = "17.0.15",
        .major = 17,
        .code_low_at = BASE + 0,
        .code_high_at = BASE + 8,
        .heaps_at = BASE + 16,
        .growable_len = 0,
        .growable_data = 8,
        .heap_memory = 8,
        .heap_segmap = 0x78,
        .heap_log2 = 0x100,
        .vspace_low = 0x10,
        .vspace_high = 0x18,
        .block_size = 16,
        .block_length = 0,
        .block_used = 8,
        .block_length_width = 8,
        .blob_name = 0x60,
        .blob_size = 0xc,
        .blob_frame_size = 0x1c,
        .blob_code = 0x20,
        .nm_method = 0x70,
        .blob_frame_complete = 0x14,
        .blob_frame_complete_width = 4,
        .call_stub_return_at = BASE + 24,
        .blob_header = 0x114,
        .has_scopes = true,
        .nm_scopes_pcs = 0x10c,
        .nm_dependencies = 0x110,
        .nm_metadata = 0x104,
        .nm_scopes_data = 0x78,
        .pcdesc_size = 16,
        .pcdesc_pc = 0,
        .pcdesc_scope = 4,
        .interp_at = BASE + 32,
        .stubq_buffer = 8,
        .stubq_limit = 0x14,
        .frame_method = -3,
        .frame_bcp = -8,
        .method_const = 8,
        .cm_constants = 8,
        .cm_code_size = 0x20,
        .cm_name_index = 0x22,
        .cm_signature_index = 0x24,
        .cm_flags = 0x1c,
        .cm_size = 48,
        .cm_has_lines = 1,
        .cm_flags_width = 2,
        .cp_holder = 0x18,
        .cp_source_file = 0x36,
        .cp_size = 72,
        .klass_name = 0x18,
        .symbol_length = 4,
        .symbol_body = 6,
        .threads_at = BASE + 40,
        .tl_length = 4,
        .tl_threads = 0x10,
        .jt_anchor = 0x290,
        .jt_osthread = 0x230,
        .jt_state = 0x338,
        .os_tid = 0xd0,
        .anchor_sp = 0,
        .anchor_pc = 8,
        .anchor_fp = 0x10,
    };
}
