#include "guestos/linux/pagecache.h"

#include <stdio.h>
#include <string.h>

/* include/linux/xarray.h: an entry with bit 0 set is a value (shadow or swap entry); bits 1-0
 * == 10 mark an internal entry: a node (entry - 2, above 4096), a sibling (offset << 2 | 2,
 * offset < XA_CHUNK_SIZE), the retry (256) or zero (257) entries. */
#define XA_INTERNAL(e) (((e)&3) == 2)
#define XA_VALUE(e)    ((e)&1)
#define XA_NODE(e)     (XA_INTERNAL(e) && (e) > 4096)
/* Levels walked at most: a 64-bit index in chunks of 4 bits. */
#define XA_MAX_DEPTH 16
/* A large folio's pages at most (PUD-sized, 1 GiB); the distance of a page from its head. */
#define LX_FOLIO_MAX_PAGES (1ull << 18)
/* File offsets (bytes) reach 2^63: page indices below 2^51. */
#define LX_MAX_INDEX (1ull << 51)

static bool member(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t want_size,
                   uint64_t *off, uint64_t *size)
{
    uint64_t sz;
    if (!lx_btf_member(b, sid, path, off, &sz) || (want_size && sz != want_size))
        return false;
    if (size)
        *size = sz;
    return true;
}

bool lx_cache_layout_of(const struct lx_kernel *k, struct lx_cache_layout *out, char *why,
                        size_t why_len)
{
    memset(out, 0, sizeof(*out));
    const struct lx_btf *b = &k->btf;
    uint32_t as = lx_btf_find_struct(b, "address_space"), node = lx_btf_find_struct(b, "xa_node"),
             page = lx_btf_find_struct(b, "page");
    uint64_t slots_size = 0, head;
    if (!k->btf_types || !as || !node || !page) {
        snprintf(why, why_len, "BTF: no struct address_space, xa_node or page");
        return false;
    }
    if (!member(b, as, "i_pages", 0, &out->i_pages, NULL) ||
        !member(b, as, "i_pages.xa_head", 8, &head, NULL) ||
        !member(b, node, "shift", 1, &out->node_shift, NULL) ||
        !member(b, node, "slots", 0, &out->node_slots, &slots_size) ||
        !member(b, page, "flags", 8, &out->page_flags, NULL)) {
        snprintf(why, why_len,
                 "BTF: no address_space.i_pages.xa_head, xa_node.shift/slots or page.flags of the "
                 "expected sizes (a kernel before the XArray, 4.20?)");
        return false;
    }
    out->i_pages_head = head;
    /* XA_CHUNK_SIZE from the slots array: 64 pointers, 16 with CONFIG_BASE_SMALL. */
    if (slots_size == 64 * 8)
        out->chunk_shift = 6;
    else if (slots_size == 16 * 8)
        out->chunk_shift = 4;
    else {
        snprintf(why, why_len, "BTF: xa_node.slots is %llu bytes, not 64 or 16 pointers",
                 (unsigned long long)slots_size);
        return false;
    }
    if (!member(b, node, "array", 8, &out->node_array, NULL))
        out->node_array = UINT64_MAX;
    int64_t bit;
    out->uptodate_bit =
        lx_btf_enum_value(b, "PG_uptodate", &bit) && bit >= 0 && bit < 64 ? (int)bit : -1;
    out->known = true;
    return true;
}

static bool kernel_pointer(uint64_t p)
{
    return (p >> 56) == 0xff && (p & 7) == 0;
}

static bool read_u64(struct lx_kread *kr, uint64_t va, uint64_t *v)
{
    return lx_kread(kr, va, v, sizeof(*v));
}

/* The entry for `index` in the tree rooted at `mapping`'s i_pages: a struct page pointer,
 * 0 for a hole, or LX_CACHE_BAD's marker 1 (never a page pointer: pages are 8-aligned). */
#define ENTRY_BAD 1ull
static uint64_t tree_entry(struct lx_kread *kr, const struct lx_cache_layout *cl, uint64_t mapping,
                           uint64_t index)
{
    uint64_t e;
    if (!read_u64(kr, mapping + cl->i_pages_head, &e))
        return ENTRY_BAD;
    if (!XA_NODE(e))
        return index == 0 ? e : 0; /* one entry, at index 0, kept in the head itself */
    const uint64_t mask = (1ull << cl->chunk_shift) - 1;
    unsigned prev = 0;
    for (int depth = 0; depth < XA_MAX_DEPTH; depth++) {
        uint64_t node = e - 2;
        uint8_t shift;
        if (!kernel_pointer(node) || !lx_kread(kr, node + cl->node_shift, &shift, 1) ||
            shift % cl->chunk_shift || shift > 63 || (depth && shift + cl->chunk_shift != prev))
            return ENTRY_BAD;
        uint64_t array;
        if (cl->node_array != UINT64_MAX &&
            (!read_u64(kr, node + cl->node_array, &array) || array != mapping + cl->i_pages))
            return ENTRY_BAD; /* a node of another tree (freed and reused, or forged) */
        if (depth == 0 && shift + cl->chunk_shift < 64 && index >> (shift + cl->chunk_shift))
            return 0; /* beyond what the tree covers */
        uint64_t off = (index >> shift) & mask;
        if (!read_u64(kr, node + cl->node_slots + 8 * off, &e))
            return ENTRY_BAD;
        if (XA_INTERNAL(e) && !XA_NODE(e) && (e >> 2) < off) {
            /* A sibling: the large folio's entry is in an earlier slot of this node. */
            off = e >> 2;
            if (!read_u64(kr, node + cl->node_slots + 8 * off, &e) || XA_INTERNAL(e))
                return ENTRY_BAD;
        }
        if (!XA_NODE(e) || shift == 0)
            return XA_INTERNAL(e) || XA_VALUE(e) ? 0 : e; /* a page, a hole or a shadow */
        prev = shift;
    }
    return ENTRY_BAD;
}

enum lx_cache_page lx_cache_find(struct lx_kread *kr, const struct lx_cache_layout *cl,
                                 const struct lx_file_layout *fl, uint64_t vmemmap_base,
                                 uint64_t mapping, uint64_t index, uint64_t *pfn)
{
    if (!cl->known || !fl->known || index >= LX_MAX_INDEX || !kernel_pointer(mapping) ||
        !kernel_pointer(vmemmap_base))
        return LX_CACHE_BAD;
    uint64_t e = tree_entry(kr, cl, mapping, index);
    if (e == ENTRY_BAD)
        return LX_CACHE_BAD;
    if (!e)
        return LX_CACHE_HOLE;
    /* The entry is the (head) struct page of a folio in the vmemmap array. */
    if (!kernel_pointer(e) || e < vmemmap_base || (e - vmemmap_base) % fl->page_size)
        return LX_CACHE_BAD;
    uint64_t head_pfn = (e - vmemmap_base) / fl->page_size, owner, base, flags;
    if (!read_u64(kr, e + fl->page_mapping, &owner))
        return LX_CACHE_BAD;
    if (owner != mapping)
        return LX_CACHE_HOLE; /* truncated or reused since the tree was read */
    if (fl->page_index == UINT64_MAX)
        base = index; /* no index to check (a kernel without it in BTF): order-0 pages only */
    else if (!read_u64(kr, e + fl->page_index, &base))
        return LX_CACHE_BAD;
    if (base > index || index - base >= LX_FOLIO_MAX_PAGES)
        return LX_CACHE_BAD;
    uint64_t at = head_pfn + (index - base);
    if (index != base) {
        /* A page inside a large folio: its own struct page must name this head. */
        uint64_t ch;
        if (fl->page_compound_head == UINT64_MAX ||
            !read_u64(kr, vmemmap_base + at * fl->page_size + fl->page_compound_head, &ch) ||
            ch != (e | 1))
            return LX_CACHE_BAD;
    }
    if (cl->uptodate_bit >= 0) {
        if (!read_u64(kr, e + cl->page_flags, &flags))
            return LX_CACHE_BAD;
        if (!(flags >> cl->uptodate_bit & 1))
            return LX_CACHE_HOLE; /* being read, or its read failed: no file bytes yet */
    }
    *pfn = at;
    return LX_CACHE_CACHED;
}

enum lx_cache_page lx_cache_read(struct lx_kread *kr, const struct lx_cache_layout *cl,
                                 const struct lx_file_layout *fl, uint64_t vmemmap_base,
                                 uint64_t mapping, uint64_t index, void *dst)
{
    uint64_t pfn;
    enum lx_cache_page r = lx_cache_find(kr, cl, fl, vmemmap_base, mapping, index, &pfn);
    if (r != LX_CACHE_CACHED)
        return r;
    return pfn < (1ull << 40) && gmem_read(kr->mem, pfn << 12, dst, 4096) ? LX_CACHE_CACHED
                                                                          : LX_CACHE_BAD;
}
