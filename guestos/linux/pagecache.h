/* A file's pages from the guest kernel's page cache, read on the drain thread: the file's
 * address_space (pagefile.h) holds its cached pages in `i_pages`, an XArray indexed by page
 * number in the file (include/linux/xarray.h, Documentation/core-api/xarray.rst; the page cache
 * uses it since 4.20): a tree of xa_node, each with XA_CHUNK_SIZE slots (64) covering `shift`
 * bits of the index, whose leaves are the struct pages (folios) of the cached pages. Empty
 * slots, value entries (the shadows of evicted pages, swap entries) and the tree's internal
 * entries are holes; a large folio is one entry with sibling entries after it (multi-index,
 * 5.17+) or its head in every slot (before), and the page sought is the head's + its distance.
 * Every offset comes from BTF; every step is checked (a node's shift is its parent's less one
 * chunk, the page belongs to that address_space at that index and is up to date), and the walk
 * is bounded by the index's bits, so a forged tree yields a hole or nothing, never a loop. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/kernel.h"
#include "guestos/linux/kread.h"
#include "guestos/linux/pagefile.h"

struct lx_cache_layout {
    bool known;
    uint64_t i_pages_head; /* address_space.i_pages.xa_head */
    uint64_t i_pages;      /* address_space.i_pages (what a node's `array` points at) */
    uint64_t node_shift;   /* xa_node.shift (unsigned char) */
    uint64_t node_slots;   /* xa_node.slots[] */
    uint64_t node_array;   /* xa_node.array; UINT64_MAX: not in BTF */
    unsigned chunk_shift;  /* log2 of the slots per node: 6 (4 with CONFIG_BASE_SMALL) */
    uint64_t page_flags;   /* page.flags */
    int uptodate_bit;      /* enum pageflags' PG_uptodate; -1: not in BTF */
};

/* From BTF, with the file layout it builds on; known false (with why) when a member is
 * missing. */
bool lx_cache_layout_of(const struct lx_kernel *k, struct lx_cache_layout *out, char *why,
                        size_t why_len);

enum lx_cache_page {
    LX_CACHE_CACHED, /* *pfn caches the page */
    LX_CACHE_HOLE,   /* not cached: never read, evicted, or being read */
    LX_CACHE_BAD,    /* what was read does not hold together (a forged or changing tree) */
};

/* The page frame caching page `index` (4 KiB pages) of the file whose address_space is at
 * kernel address `mapping`. */
enum lx_cache_page lx_cache_find(struct lx_kread *kr, const struct lx_cache_layout *cl,
                                 const struct lx_file_layout *fl, uint64_t vmemmap_base,
                                 uint64_t mapping, uint64_t index, uint64_t *pfn);

/* The same, copying the page's 4096 bytes to dst when it is cached. */
enum lx_cache_page lx_cache_read(struct lx_kread *kr, const struct lx_cache_layout *cl,
                                 const struct lx_file_layout *fl, uint64_t vmemmap_base,
                                 uint64_t mapping, uint64_t index, void *dst);
