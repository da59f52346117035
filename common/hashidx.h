/* An open-addressing hash set of u32 indices into a caller-owned array: the caller hashes its
 * key and supplies the equality test, so one table type serves locations, functions and names. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HASHIDX_NONE UINT32_MAX

struct hashidx {
    uint64_t *hash;
    uint32_t *idx; /* HASHIDX_NONE = empty slot */
    size_t cap;    /* power of two */
    size_t n;
};

typedef bool (*hashidx_eq_fn)(const void *ctx, uint32_t idx);

void hashidx_init(struct hashidx *h);
void hashidx_free(struct hashidx *h);
uint32_t hashidx_find(const struct hashidx *h, uint64_t hash, hashidx_eq_fn eq, const void *ctx);
/* Insert without checking for duplicates. Returns 0, or -1 when out of memory. */
int hashidx_insert(struct hashidx *h, uint64_t hash, uint32_t idx);

/* FNV-1a over bytes, continued from `h` (start with HASHIDX_SEED). */
#define HASHIDX_SEED 0xcbf29ce484222325ull
uint64_t hashidx_bytes(uint64_t h, const void *p, size_t len);
uint64_t hashidx_u64(uint64_t h, uint64_t v);
