#include "common/hashidx.h"

#include <stdlib.h>
#include <string.h>

void hashidx_init(struct hashidx *h)
{
    memset(h, 0, sizeof(*h));
}

void hashidx_free(struct hashidx *h)
{
    free(h->hash);
    free(h->idx);
    memset(h, 0, sizeof(*h));
}

uint64_t hashidx_bytes(uint64_t h, const void *p, size_t len)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

uint64_t hashidx_u64(uint64_t h, uint64_t v)
{
    /* A multiply-xorshift mix: addresses differ mostly in their low bits. */
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

uint32_t hashidx_find(const struct hashidx *h, uint64_t hash, hashidx_eq_fn eq, const void *ctx)
{
    if (!h->cap)
        return HASHIDX_NONE;
    size_t mask = h->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        if (h->idx[i] == HASHIDX_NONE)
            return HASHIDX_NONE;
        if (h->hash[i] == hash && eq(ctx, h->idx[i]))
            return h->idx[i];
    }
}

static void put(uint64_t *hs, uint32_t *is, size_t cap, uint64_t hash, uint32_t idx)
{
    size_t mask = cap - 1, i = hash & mask;
    while (is[i] != HASHIDX_NONE)
        i = (i + 1) & mask;
    hs[i] = hash;
    is[i] = idx;
}

int hashidx_insert(struct hashidx *h, uint64_t hash, uint32_t idx)
{
    if ((h->n + 1) * 2 > h->cap) { /* keep the load factor at or below 1/2 */
        size_t cap = h->cap ? h->cap * 2 : 64;
        uint64_t *hs = malloc(cap * sizeof(*hs));
        uint32_t *is = malloc(cap * sizeof(*is));
        if (!hs || !is) {
            free(hs);
            free(is);
            return -1;
        }
        memset(is, 0xff, cap * sizeof(*is));
        for (size_t i = 0; i < h->cap; i++) {
            if (h->idx[i] != HASHIDX_NONE)
                put(hs, is, cap, h->hash[i], h->idx[i]);
        }
        free(h->hash);
        free(h->idx);
        h->hash = hs;
        h->idx = is;
        h->cap = cap;
    }
    put(h->hash, h->idx, h->cap, hash, idx);
    h->n++;
    return 0;
}
