/* Decompressed clusters of a qcow2 image, kept: libqcow decompresses a compressed cluster at
 * every read that touches it and keeps none (bench/side-by-side/issue-30-qcow2.md: a 4 KiB read
 * of a compressed image cost 107 times a raw one), and a guest reads a cluster in many small
 * pieces. A fixed number of chunk-sized slots, least recently used first out; the image is
 * never written (the block device's overlay takes the guest's writes), so what is kept never
 * goes stale. Not thread-safe: qcow_image.c holds its lock. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct cluster_cache;

/* `slots` slots of `chunk` bytes; NULL when out of memory. */
struct cluster_cache *cluster_cache_new(uint32_t chunk, unsigned slots);
void cluster_cache_free(struct cluster_cache *c);

/* Chunk `index`'s bytes, or NULL when not kept. */
const uint8_t *cluster_cache_find(struct cluster_cache *c, uint64_t index);
/* The least recently used slot, now chunk `index`'s: the caller fills it, then keeps it, or
 * drops it when the read failed. */
uint8_t *cluster_cache_claim(struct cluster_cache *c, uint64_t index);
void cluster_cache_drop(struct cluster_cache *c, uint64_t index);

/* Hits and misses so far (the summary's and the benchmark's). */
void cluster_cache_stats(const struct cluster_cache *c, uint64_t *hits, uint64_t *misses);
