/* libFuzzer: a file's pages looked up in a hostile guest's page cache. The input is guest RAM
 * from guest-physical 0 behind a fixed direct map (fuzz_direct.h: the page tables are not the
 * subject here), holding the address_space, its inode and super block, the XArray's nodes and
 * the struct page array at the places fuzz_pagecache.h names, so the guest controls every
 * entry, node, shift, sibling, page descriptor and flag. Every lookup must stay bounded and
 * answer cached (with a page frame in the struct page array's reach), a hole, or bad. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ram.h"
#include "guestos/fuzz/fuzz_pagecache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gmem mem;
    uint8_t *ram = fuzz_ram(data, size, 1u << 20, 0, &mem);
    if (!ram)
        return 0;
    static struct direct_tables pt;
    uint64_t root = direct_map_add(&mem, &pt);
    struct lx_kread kr;
    char why[128];
    if (!root || lx_kread_init(&kr, &mem, root, false, why, sizeof(why)) < 0)
        abort();
    struct lx_page_file f;
    if (lx_mapping_file(&kr, &pc_file_layout, PC_VA(PC_MAPPING), &f) &&
        (f.mapping != PC_VA(PC_MAPPING) || (int64_t)f.size < 0))
        abort();
    /* Indices at the tree's edges, and a few the input picks (its last bytes). */
    uint64_t picked[3] = {0};
    if (size >= 24)
        memcpy(picked, data + size - 24, 24);
    const uint64_t index[] = {0,  1,    8,    10,         63,        64,        70,
                              71, 4095, 4096, 1ull << 50, picked[0], picked[1], picked[2]};
    static uint8_t page[4096];
    for (size_t i = 0; i < sizeof(index) / sizeof(index[0]); i++) {
        uint64_t pfn = UINT64_MAX;
        enum lx_cache_page r = lx_cache_find(&kr, &pc_cache_layout, &pc_file_layout,
                                             PC_VA(PC_VMEMMAP), PC_VA(PC_MAPPING), index[i], &pfn);
        if (r != LX_CACHE_CACHED && r != LX_CACHE_HOLE && r != LX_CACHE_BAD)
            abort();
        if (r == LX_CACHE_CACHED && pfn >= (1ull << 40))
            abort();
        (void)lx_cache_read(&kr, &pc_cache_layout, &pc_file_layout, PC_VA(PC_VMEMMAP),
                            PC_VA(PC_MAPPING), index[i], page);
    }
    free(ram);
    return 0;
}
