#include "vmm/virtio/net.h"

#include <stdlib.h>
#include <string.h>

#include "vmm/virtio/blk.h" /* VIRTIO_F_VERSION_1 */

int virtio_net_init(struct virtio_net *n, const uint8_t mac[6])
{
    memset(n, 0, sizeof(*n));
    memcpy(n->mac, mac, 6);
    n->pending = calloc(VIRTIO_NET_RX_PENDING, sizeof(n->pending[0]));
    if (!n->pending)
        return -1;
    pthread_mutex_init(&n->rx_lock, NULL);
    return 0;
}

void virtio_net_destroy(struct virtio_net *n)
{
    if (n->pending)
        pthread_mutex_destroy(&n->rx_lock);
    free(n->pending);
    n->pending = NULL;
}

static uint64_t ops_features(void *dev)
{
    (void)dev;
    return 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MAC | 1ull << VIRTIO_NET_F_STATUS;
}

/* 5.1.4: mac[6], then status (le16). */
static void ops_config_read(void *dev, uint32_t off, uint8_t *out, unsigned len)
{
    struct virtio_net *n = dev;
    uint8_t cfg[8];
    memcpy(cfg, n->mac, 6);
    cfg[6] = VIRTIO_NET_S_LINK_UP;
    cfg[7] = 0;
    for (unsigned i = 0; i < len; i++)
        out[i] = off + i < sizeof(cfg) ? cfg[off + i] : 0;
}

/* Queue 0 (receiveq): buffers made available, filled from what is held (rx_ready's thread);
 * queue 1 (transmitq): a frame to send. */
static int ops_pop(void *dev, unsigned q, struct virtq *vq, const struct gmem *m)
{
    struct virtio_net *n = dev;
    if (q == 0) {
        if (n->rx_ready)
            n->rx_ready(n->rx_ctx);
        return 0;
    }
    return virtq_pop(vq, m, &n->tx);
}

/* The readable segments, header and frame, gathered; the header is not looked at (no offload
 * was offered, so it asks for none). */
static int64_t ops_serve(void *dev, uint16_t *head)
{
    struct virtio_net *n = dev;
    const struct virtq_req *r = &n->tx;
    *head = r->head;
    uint64_t len = r->read_bytes;
    if (len < VIRTIO_NET_HDR_LEN || len > sizeof(n->tx_frame)) {
        n->tx_dropped++;
        return 0;
    }
    size_t at = 0;
    for (unsigned i = 0; i < r->nread; i++) {
        memcpy(n->tx_frame + at, r->seg[i].host, r->seg[i].len);
        at += r->seg[i].len;
    }
    size_t flen = at - VIRTIO_NET_HDR_LEN;
    n->tx_frames++;
    n->tx_bytes += flen;
    if (n->send)
        n->send(n->send_ctx, n->tx_frame + VIRTIO_NET_HDR_LEN, flen);
    return 0;
}

const struct virtio_dev_ops virtio_net_ops = {
    .device_id = 1, /* 5: network card */
    .nqueues = 2,
    .features = ops_features,
    .config_read = ops_config_read,
    .pop = ops_pop,
    .serve = ops_serve,
};

/* One held frame into receive buffer r: the header (no offloads, one buffer), then the frame
 * across the writable segments. A buffer too small for it gets it cut: counted as dropped. */
static int64_t fill_one(void *ctx, const struct virtq_req *r)
{
    struct virtio_net *n = ctx;
    const struct virtio_net_frame *f = &n->pending[n->head];
    uint8_t hdr[VIRTIO_NET_HDR_LEN] = {0};
    hdr[10] = 1; /* num_buffers, le16 */
    const uint8_t *parts[2] = {hdr, f->data};
    size_t lens[2] = {sizeof(hdr), f->len}, part = 0, within = 0;
    uint64_t written = 0;
    for (unsigned i = r->nread; i < r->nseg && part < 2; i++) {
        size_t room = r->seg[i].len, at = 0;
        while (room && part < 2) {
            size_t k = lens[part] - within < room ? lens[part] - within : room;
            memcpy(r->seg[i].host + at, parts[part] + within, k);
            at += k;
            room -= k;
            within += k;
            written += k;
            if (within == lens[part]) {
                part++;
                within = 0;
            }
        }
    }
    if (part < 2) {
        n->rx_dropped++;
        return 0;
    }
    n->rx_frames++;
    n->rx_bytes += f->len;
    return (int64_t)written;
}

/* Under rx_lock: deliver held frames while the guest has buffers. */
static void flush_locked(struct virtio_net *n)
{
    while (n->n && n->transport) {
        if (virtio_mmio_fill(n->transport, 0, &n->rx, fill_one, n) <= 0)
            return;
        n->head = (n->head + 1) % VIRTIO_NET_RX_PENDING;
        n->n--;
    }
}

void virtio_net_receive(struct virtio_net *n, const uint8_t *frame, size_t len)
{
    pthread_mutex_lock(&n->rx_lock);
    if (len > VIRTIO_NET_MAX_FRAME || n->n == VIRTIO_NET_RX_PENDING) {
        n->rx_dropped++;
    } else {
        struct virtio_net_frame *f = &n->pending[(n->head + n->n) % VIRTIO_NET_RX_PENDING];
        f->len = (uint16_t)len;
        memcpy(f->data, frame, len);
        n->n++;
        flush_locked(n);
    }
    pthread_mutex_unlock(&n->rx_lock);
}

void virtio_net_flush(struct virtio_net *n)
{
    pthread_mutex_lock(&n->rx_lock);
    flush_locked(n);
    pthread_mutex_unlock(&n->rx_lock);
}
