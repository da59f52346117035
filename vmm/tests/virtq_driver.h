/* The driver's side of a split virtqueue for the virtio tests (VIRTIO 1.2 2.7): descriptors,
 * the available ring and the used ring in a guest RAM the test owns. */
#pragma once

#include <stdint.h>
#include <string.h>

#include "vmm/virtio/virtq.h"

struct vq_driver {
    uint8_t *ram;
    uint64_t desc, avail, used;
    uint16_t size, avail_idx;
};

static inline void vqd_desc(struct vq_driver *v, uint64_t table, uint16_t i, uint64_t addr,
                            uint32_t len, uint16_t flags, uint16_t next)
{
    uint8_t *p = v->ram + table + 16u * i;
    memcpy(p, &addr, 8);
    memcpy(p + 8, &len, 4);
    memcpy(p + 12, &flags, 2);
    memcpy(p + 14, &next, 2);
}

/* Makes chain `head` available (2.7.13: the entry, then the index with release). */
static inline void vqd_publish(struct vq_driver *v, uint16_t head)
{
    memcpy(v->ram + v->avail + 4 + 2u * (v->avail_idx % v->size), &head, 2);
    v->avail_idx++;
    __atomic_store_n((uint16_t *)(v->ram + v->avail + 2), v->avail_idx, __ATOMIC_RELEASE);
}

/* Used element k: its length, and its id in *id. */
static inline uint32_t vqd_used(const struct vq_driver *v, uint16_t k, uint32_t *id)
{
    uint32_t len;
    memcpy(id, v->ram + v->used + 4 + 8u * (k % v->size), 4);
    memcpy(&len, v->ram + v->used + 8 + 8u * (k % v->size), 4);
    return len;
}

static inline uint16_t vqd_used_idx(const struct vq_driver *v)
{
    return __atomic_load_n((uint16_t *)(v->ram + v->used + 2), __ATOMIC_ACQUIRE);
}
