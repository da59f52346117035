/* Which file a guest page caches, read on the drain thread from the page's own descriptor: the
 * struct page of page frame `pfn` is at vmemmap_base + pfn * sizeof(struct page) (x86-64's
 * vmemmap model, arch/x86/include/asm/pgtable_64_types.h; vmemmap_base is KASLR'd with
 * CONFIG_RANDOMIZE_MEMORY, read from the kernel variable), its `mapping` is the file's
 * address_space when the page is a file's (the low bits PAGE_MAPPING_ANON 1 and
 * PAGE_MAPPING_MOVABLE 2 clear, include/linux/page-flags.h), whose `host` is the inode: its
 * number, size and super block, whose `s_uuid` names the file system. A tail page of a large
 * folio takes these from its head (compound_head's bit 0, include/linux/page-flags.h). Every
 * offset comes from BTF; every pointer is checked and the inode must point back to the
 * address_space (inode.i_mapping), so a page reused meanwhile, or forged, yields nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/kernel.h"
#include "guestos/linux/kread.h"

struct lx_file_layout {
    bool known;
    uint64_t page_size;                /* sizeof(struct page) */
    uint64_t page_mapping, page_index; /* struct page; page_index UINT64_MAX: not in BTF */
    uint64_t page_compound_head;       /* UINT64_MAX: not in BTF */
    uint64_t as_host;                  /* address_space.host */
    uint64_t inode_ino, inode_size, inode_sb, inode_mapping;
    uint64_t sb_uuid;      /* super_block.s_uuid (uuid_t, 16 bytes) */
    uint64_t file_mapping; /* file.f_mapping; UINT64_MAX: not in BTF */
};

/* From BTF; known false (with why) when a member is missing. */
bool lx_file_layout_of(const struct lx_kernel *k, struct lx_file_layout *out, char *why,
                       size_t why_len);

struct lx_page_file {
    uint64_t ino;     /* inode.i_ino */
    uint64_t size;    /* inode.i_size, bytes */
    uint8_t uuid[16]; /* the file system's super_block.s_uuid */
    uint64_t index;   /* the page's index in the file (pages), UINT64_MAX when unknown */
    uint64_t mapping; /* the kernel address of its address_space (the page cache's key) */
};

/* The file whose address_space is at kernel address `mapping` (index unknown). False when
 * what is there is not an address_space whose inode points back to it. */
bool lx_mapping_file(struct lx_kread *kr, const struct lx_file_layout *fl, uint64_t mapping,
                     struct lx_page_file *out);

/* The address_space of the executable of the process whose mm_struct is at `mm`: its
 * exe_file's (mm_struct.exe_file at `exe_file_off`) f_mapping. False if any link is missing. */
bool lx_exe_mapping(struct lx_kread *kr, const struct lx_file_layout *fl, uint64_t exe_file_off,
                    uint64_t mm, uint64_t *mapping);

/* The file page frame `pfn` caches. False: not a file's page (anonymous, free, a kernel
 * page), or what was read does not hold together. */
bool lx_page_file(struct lx_kread *kr, const struct lx_file_layout *fl, uint64_t vmemmap_base,
                  uint64_t pfn, struct lx_page_file *out);
