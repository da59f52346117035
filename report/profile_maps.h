/* Modules and mappings of a profile by key and by address, so that loading and symbolizing a
 * recording with 10^5-10^6 processes and mappings stays O(n log n) (docs/reliability.md, "Report
 * cost"): private to report/profile.c and report/fxt_load.c. */
#pragma once

#include "report/profile.h"
#include "common/hashidx.h"

struct prof_maps_index {
    struct hashidx mods; /* key (build-id or name, kernel) */
    struct hashidx maps; /* key (pid, start, size, module) */
    uint32_t *order;     /* mapping ids sorted by (pid, start, id) */
    size_t norder;       /* mappings.n when `order` was built (rebuilt when it changes) */
};

/* The index (created on first use), NULL when out of memory. */
struct prof_maps_index *prof_maps_index(struct profile *p);

/* hashidx hashes of the two keys. */
uint64_t prof_module_hash(const char *name, const uint8_t *build_id, uint32_t build_id_len,
                          bool kernel);
uint64_t prof_mapping_hash(uint64_t pid, uint64_t start, uint64_t size, uint32_t module);

/* The first-added mapping of `pid` that holds addr, or PROF_NONE. O(log mappings). */
uint32_t prof_find_mapping(struct profile *p, uint64_t pid, uint64_t addr);
