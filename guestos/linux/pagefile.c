#include "guestos/linux/pagefile.h"

#include <stdio.h>
#include <string.h>

/* Page frames described at most: 2^40 pages is 4 PiB of guest memory. */
#define LX_MAX_PFN (1ull << 40)

static bool member(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t want_size,
                   uint64_t *off)
{
    uint64_t size;
    return lx_btf_member(b, sid, path, off, &size) && (!want_size || size == want_size);
}

bool lx_file_layout_of(const struct lx_kernel *k, struct lx_file_layout *out, char *why,
                       size_t why_len)
{
    memset(out, 0, sizeof(*out));
    const struct lx_btf *b = &k->btf;
    uint32_t page = lx_btf_find_struct(b, "page"), as = lx_btf_find_struct(b, "address_space"),
             inode = lx_btf_find_struct(b, "inode"), sb = lx_btf_find_struct(b, "super_block");
    if (!k->btf_types || !page || !as || !inode || !sb) {
        snprintf(why, why_len, "BTF: no struct page, address_space, inode or super_block");
        return false;
    }
    if (!lx_btf_type_size(b, page, &out->page_size) || out->page_size < 32 ||
        out->page_size > 256 || !member(b, page, "mapping", 8, &out->page_mapping) ||
        !member(b, as, "host", 8, &out->as_host) ||
        !member(b, inode, "i_ino", 8, &out->inode_ino) ||
        !member(b, inode, "i_size", 8, &out->inode_size) ||
        !member(b, inode, "i_sb", 8, &out->inode_sb) ||
        !member(b, inode, "i_mapping", 8, &out->inode_mapping) ||
        !member(b, sb, "s_uuid", 16, &out->sb_uuid)) {
        snprintf(why, why_len,
                 "BTF: no page.mapping, address_space.host, inode.i_ino/i_size/i_sb/i_mapping "
                 "or super_block.s_uuid of the expected sizes");
        return false;
    }
    /* Optional: the page's index in its file (renamed __folio_index as struct page shrinks),
     * and the tail pages' link to their head. */
    if (!member(b, page, "index", 8, &out->page_index) &&
        !member(b, page, "__folio_index", 8, &out->page_index))
        out->page_index = UINT64_MAX;
    if (!member(b, page, "compound_head", 8, &out->page_compound_head))
        out->page_compound_head = UINT64_MAX;
    uint32_t file = lx_btf_find_struct(b, "file");
    if (!file || !member(b, file, "f_mapping", 8, &out->file_mapping))
        out->file_mapping = UINT64_MAX;
    if (!k->sym.vmemmap_base) {
        snprintf(why, why_len, "no vmemmap_base in kallsyms");
        return false;
    }
    out->known = true;
    return true;
}

static bool kernel_pointer(uint64_t p)
{
    return (p >> 56) == 0xff && (p & 7) == 0; /* the upper half, 4- or 5-level */
}

static bool read_u64(struct lx_kread *kr, uint64_t va, uint64_t *v)
{
    return lx_kread(kr, va, v, sizeof(*v));
}

bool lx_mapping_file(struct lx_kread *kr, const struct lx_file_layout *fl, uint64_t mapping,
                     struct lx_page_file *out)
{
    uint64_t host, back, sb;
    if (!fl->known || !mapping || (mapping & 3) || !kernel_pointer(mapping) ||
        !read_u64(kr, mapping + fl->as_host, &host) || !kernel_pointer(host) ||
        !read_u64(kr, host + fl->inode_mapping, &back) || back != mapping ||
        !read_u64(kr, host + fl->inode_sb, &sb) || !kernel_pointer(sb) ||
        !read_u64(kr, host + fl->inode_ino, &out->ino) ||
        !read_u64(kr, host + fl->inode_size, &out->size) || (int64_t)out->size < 0 ||
        !lx_kread(kr, sb + fl->sb_uuid, out->uuid, sizeof(out->uuid)))
        return false;
    out->mapping = mapping;
    out->index = UINT64_MAX;
    return true;
}

bool lx_exe_mapping(struct lx_kread *kr, const struct lx_file_layout *fl, uint64_t exe_file_off,
                    uint64_t mm, uint64_t *mapping)
{
    uint64_t file;
    return fl->known && fl->file_mapping != UINT64_MAX && exe_file_off && kernel_pointer(mm) &&
           read_u64(kr, mm + exe_file_off, &file) && kernel_pointer(file) &&
           read_u64(kr, file + fl->file_mapping, mapping) && kernel_pointer(*mapping);
}

bool lx_page_file(struct lx_kread *kr, const struct lx_file_layout *fl, uint64_t vmemmap_base,
                  uint64_t pfn, struct lx_page_file *out)
{
    if (!fl->known || pfn >= LX_MAX_PFN || !kernel_pointer(vmemmap_base))
        return false;
    uint64_t page = vmemmap_base + pfn * fl->page_size, head = page;
    uint64_t tail_pages = 0;
    uint64_t ch;
    if (fl->page_compound_head != UINT64_MAX && read_u64(kr, page + fl->page_compound_head, &ch) &&
        (ch & 1)) {
        /* A tail page: its head is an earlier struct page of the same array. */
        head = ch - 1;
        if (head >= page || head < vmemmap_base || (page - head) % fl->page_size)
            return false;
        tail_pages = (page - head) / fl->page_size;
    }
    uint64_t mapping, index = UINT64_MAX;
    if (!read_u64(kr, head + fl->page_mapping, &mapping) || !lx_mapping_file(kr, fl, mapping, out))
        return false;
    if (fl->page_index != UINT64_MAX && read_u64(kr, head + fl->page_index, &index) &&
        index < (1ull << 52))
        index += tail_pages;
    else
        index = UINT64_MAX;
    out->index = index;
    return true;
}
