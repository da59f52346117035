/* A virtio device as its transport sees it (kvmtool's device-ops pattern): its id, queues,
 * features, configuration space and what a queue notification does. vmm/virtio/mmio.h is the
 * transport; vmm/virtio/blk.h the first device. */
#pragma once

#include <stdint.h>

#include "guestwalk/gmem.h"
#include "vmm/virtio/virtq.h"

struct virtio_dev_ops {
    uint32_t device_id; /* VIRTIO 1.2 section 5: 2 = block device */
    unsigned nqueues;
    uint64_t (*features)(void *dev);
    void (*config_read)(void *dev, uint32_t off, uint8_t *out, unsigned len);
    /* Serve queue q; returns requests completed, -1 if the queue broke. */
    int (*notify)(void *dev, unsigned q, struct virtq *vq, const struct gmem *m);
};
