#include "vmm/qcow/cluster_cache.h"

#include <stdbool.h>
#include <stdlib.h>

struct slot {
    uint64_t index;
    uint64_t used; /* when last found or claimed: the cache's clock */
    bool valid;
};

struct cluster_cache {
    uint32_t chunk;
    unsigned n;
    uint64_t clock, hits, misses;
    struct slot *slots;
    uint8_t *data; /* n * chunk */
};

struct cluster_cache *cluster_cache_new(uint32_t chunk, unsigned slots)
{
    struct cluster_cache *c = calloc(1, sizeof(*c));
    if (!c || !slots)
        goto fail;
    c->chunk = chunk;
    c->n = slots;
    c->slots = calloc(slots, sizeof(c->slots[0]));
    c->data = malloc((size_t)slots * chunk);
    if (!c->slots || !c->data)
        goto fail;
    return c;
fail:
    cluster_cache_free(c);
    return NULL;
}

void cluster_cache_free(struct cluster_cache *c)
{
    if (!c)
        return;
    free(c->slots);
    free(c->data);
    free(c);
}

/* A linear search: at most a few hundred slots, each compared in a cycle or two, beside a
 * decompression of tens of microseconds that a hit saves. */
const uint8_t *cluster_cache_find(struct cluster_cache *c, uint64_t index)
{
    for (unsigned i = 0; i < c->n; i++)
        if (c->slots[i].valid && c->slots[i].index == index) {
            c->slots[i].used = ++c->clock;
            c->hits++;
            return c->data + (size_t)i * c->chunk;
        }
    c->misses++;
    return NULL;
}

uint8_t *cluster_cache_claim(struct cluster_cache *c, uint64_t index)
{
    unsigned victim = 0;
    for (unsigned i = 0; i < c->n; i++) {
        if (!c->slots[i].valid) {
            victim = i;
            break;
        }
        if (c->slots[i].used < c->slots[victim].used)
            victim = i;
    }
    c->slots[victim] = (struct slot){index, ++c->clock, true};
    return c->data + (size_t)victim * c->chunk;
}

void cluster_cache_drop(struct cluster_cache *c, uint64_t index)
{
    for (unsigned i = 0; i < c->n; i++)
        if (c->slots[i].valid && c->slots[i].index == index)
            c->slots[i].valid = false;
}

void cluster_cache_stats(const struct cluster_cache *c, uint64_t *hits, uint64_t *misses)
{
    *hits = c ? c->hits : 0;
    *misses = c ? c->misses : 0;
}
