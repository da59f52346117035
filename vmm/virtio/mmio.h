/* The virtio-MMIO transport (VIRTIO 1.2 section 4.2, version 2 "modern" register layout): one
 * device's registers in a 4 KiB window of guest-physical address space, its queues, its status
 * and its interrupt. The device itself is a table of operations (kvmtool's pattern), the block
 * device being the first (vmm/virtio/blk.h). Every register access comes from the guest: widths,
 * alignments, queue indices and the order of the status handshake are checked, and whatever the
 * spec leaves undefined is ignored (reads as 0). Linux finds such a device from
 * `virtio_mmio.device=4K@ADDR:IRQ` on its command line (drivers/virtio/virtio_mmio.c). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "guestwalk/gmem.h"
#include "vmm/virtio/device.h"
#include "vmm/virtio/virtq.h"

#define VIRTIO_MMIO_SIZE         0x1000u
#define VIRTIO_MMIO_MAX_QUEUES   4
#define VIRTIO_MMIO_QUEUE_NOTIFY 0x050u /* 4.2.2: the register a driver writes a queue index to */

/* 2.1: device status bits. */
#define VIRTIO_STATUS_ACKNOWLEDGE        1u
#define VIRTIO_STATUS_DRIVER             2u
#define VIRTIO_STATUS_DRIVER_OK          4u
#define VIRTIO_STATUS_FEATURES_OK        8u
#define VIRTIO_STATUS_DEVICE_NEEDS_RESET 64u
#define VIRTIO_STATUS_FAILED             128u

/* 4.2.2: InterruptStatus bits. */
#define VIRTIO_MMIO_INT_VRING  1u
#define VIRTIO_MMIO_INT_CONFIG 2u

struct virtio_mmio {
    const struct virtio_dev_ops *ops;
    void *dev;
    const struct gmem *mem;
    /* Raises (true) or lowers (false) the device's interrupt line. */
    void (*irq)(void *ctx, bool level);
    void *irq_ctx;
    pthread_mutex_t lock; /* vCPU threads may access the registers concurrently */
    /* Held while a queue is served, one request after another: the registers' lock is taken
     * only to take a request and to return it, so a vCPU never waits for a request's data. */
    pthread_mutex_t serve_lock;
    uint64_t generation; /* bumped by every reset: a request taken before one is not returned */
    uint32_t status, int_status, config_generation;
    uint32_t dev_features_sel, drv_features_sel, queue_sel;
    uint64_t drv_features;
    struct virtq q[VIRTIO_MMIO_MAX_QUEUES];
};

void virtio_mmio_init(struct virtio_mmio *d, const struct virtio_dev_ops *ops, void *dev,
                      const struct gmem *mem, void (*irq)(void *ctx, bool level), void *irq_ctx);
void virtio_mmio_destroy(struct virtio_mmio *d);

/* A notification of queue `index` that did not come through the registers (an I/O thread woken
 * by KVM's ioeventfd for a write to QueueNotify): served exactly as that write would be. */
void virtio_mmio_notify(struct virtio_mmio *d, uint32_t index);

/* The device puts data into queue `index` on its own (a network device's receive queue: 5.1.6.4):
 * under the registers' lock, the next buffer the driver made available is taken into *r, `fill`
 * writes into its writable segments (returning the bytes written), and it goes back to the
 * driver with the interrupt. 1 done, 0 no buffer available (the driver's next notification of
 * the queue says it added some), -1 the device is not working or the queue broke. */
int virtio_mmio_fill(struct virtio_mmio *d, uint32_t index, struct virtq_req *r,
                     int64_t (*fill)(void *ctx, const struct virtq_req *r), void *ctx);

/* One guest access of `len` bytes at `off` into the window; reads fill data[0..len). */
void virtio_mmio_access(struct virtio_mmio *d, uint32_t off, bool is_write, uint8_t *data,
                        unsigned len);
