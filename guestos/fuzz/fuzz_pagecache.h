/* The kernel structures of a page-cache lookup laid out in RAM behind the fixed direct map
 * (fuzz_direct.h), for fuzz_guestos_pagecache and test_pagecache: the layouts BTF would give
 * (offsets of our choosing, sizes as x86-64's), and where each structure sits (RAM offsets). */
#pragma once

#include "guestos/fuzz/fuzz_direct.h"
#include "guestos/linux/pagecache.h"

#define PC_MAPPING  0x1000ull  /* struct address_space */
#define PC_INODE    0x2000ull  /* struct inode */
#define PC_SB       0x3000ull  /* struct super_block */
#define PC_NODES    0x4000ull  /* xa_node i at PC_NODES + i * 0x1000 */
#define PC_VMEMMAP  0x80000ull /* struct page of pfn p at PC_VMEMMAP + p * 64 */
#define PC_VA(off)  (DIRECT_MAP_VA + (off))
#define PC_PAGE(p)  (PC_VA(PC_VMEMMAP) + (uint64_t)(p)*64)
#define PC_NODE(i)  (PC_VA(PC_NODES) + (uint64_t)(i)*0x1000)
#define PC_ENTRY(n) (PC_NODE(n) + 2) /* xa_mk_node */

static const struct lx_file_layout pc_file_layout = {
    .known = true,
    .page_size = 64,
    .page_mapping = 0x18,
    .page_index = 0x20,
    .page_compound_head = 0x8,
    .as_host = 0x0,
    .inode_ino = 0x40,
    .inode_size = 0x50,
    .inode_sb = 0x28,
    .inode_mapping = 0x30,
    .sb_uuid = 0x100,
    .file_mapping = UINT64_MAX,
};

static const struct lx_cache_layout pc_cache_layout = {
    .known = true,
    .i_pages = 0x8,
    .i_pages_head = 0x10,
    .node_shift = 0x0,
    .node_slots = 0x28,
    .node_array = 0x18,
    .chunk_shift = 6,
    .page_flags = 0x0,
    .uptodate_bit = 2,
};
