/* A virtio network device (VIRTIO 1.2 section 5.1) apart from any transport and any backend:
 * the guest's Ethernet frames from its transmit queue go to the backend (`send`); frames for
 * the guest wait in a bounded queue until the guest has made receive buffers available, and are
 * counted, never blocked on, when it has none (a guest that stops reading loses frames, as on a
 * wire). No offloads are offered (no checksum, segmentation or mergeable buffers): each frame
 * is at most VIRTIO_NET_MAX_FRAME bytes after the 12-byte header (5.1.6), and a larger one
 * from the guest is dropped and counted. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/virtio/device.h"
#include "vmm/virtio/mmio.h"
#include "vmm/virtio/virtq.h"

/* 5.1.3: feature bits offered. */
#define VIRTIO_NET_F_MAC     5
#define VIRTIO_NET_F_STATUS  16
#define VIRTIO_NET_S_LINK_UP 1
/* 5.1.6: struct virtio_net_hdr with VIRTIO_F_VERSION_1 (num_buffers included). */
#define VIRTIO_NET_HDR_LEN 12u
/* An Ethernet frame without its FCS at the default MTU of 1500 with a VLAN tag. */
#define VIRTIO_NET_MAX_FRAME 1518u
/* Frames for the guest held while it has no receive buffer. */
#define VIRTIO_NET_RX_PENDING 256u

struct virtio_net {
    uint8_t mac[6];
    /* Where the guest's frames go (the backend); called on the notifying thread. */
    void (*send)(void *ctx, const uint8_t *frame, size_t len);
    void *send_ctx;
    /* Told when the guest made receive buffers available (from under the transport's lock:
     * it must only wake whoever calls virtio_net_flush). */
    void (*rx_ready)(void *ctx);
    void *rx_ctx;
    struct virtio_mmio *transport; /* for virtio_net_flush */
    /* The transmit request being served (pop, then serve). */
    struct virtq_req tx;
    uint8_t tx_frame[VIRTIO_NET_HDR_LEN + VIRTIO_NET_MAX_FRAME];
    /* Frames for the guest: a ring of VIRTIO_NET_RX_PENDING, under rx_lock. */
    pthread_mutex_t rx_lock;
    struct virtio_net_frame {
        uint16_t len;
        uint8_t data[VIRTIO_NET_MAX_FRAME];
    } * pending;
    unsigned head, n;
    struct virtq_req rx; /* the receive buffer being filled (under rx_lock) */
    uint64_t tx_frames, tx_bytes, tx_dropped, rx_frames, rx_bytes, rx_dropped;
};

extern const struct virtio_dev_ops virtio_net_ops;

/* A device with this MAC address; -1 when out of memory. */
int virtio_net_init(struct virtio_net *n, const uint8_t mac[6]);
void virtio_net_destroy(struct virtio_net *n);

/* A frame for the guest (the backend's): delivered at once if the guest has a buffer, else
 * held (dropped and counted when VIRTIO_NET_RX_PENDING are held already). */
void virtio_net_receive(struct virtio_net *n, const uint8_t *frame, size_t len);
/* Deliver what is held into the buffers the guest has made available since. */
void virtio_net_flush(struct virtio_net *n);
