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
    /* Take the next request of queue q (under the transport's lock): 1 taken, 0 none, -1 the
     * queue broke. */
    int (*pop)(void *dev, unsigned q, struct virtq *vq, const struct gmem *m);
    /* Serve the request pop took, without the transport's lock held (its data moves while the
     * vCPUs use the registers): the bytes written into its buffers, or -1 if it was abandoned
     * because the VM is stopping (then it is never returned to the driver). */
    int64_t (*serve)(void *dev, uint16_t *head);
};
