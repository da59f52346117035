#include "vmm/virtio/mmio.h"

#include <string.h>

/* 4.2.2: the register offsets of the version 2 layout. */
enum {
    REG_MAGIC = 0x000,
    REG_VERSION = 0x004,
    REG_DEVICE_ID = 0x008,
    REG_VENDOR_ID = 0x00c,
    REG_DEVICE_FEATURES = 0x010,
    REG_DEVICE_FEATURES_SEL = 0x014,
    REG_DRIVER_FEATURES = 0x020,
    REG_DRIVER_FEATURES_SEL = 0x024,
    REG_QUEUE_SEL = 0x030,
    REG_QUEUE_NUM_MAX = 0x034,
    REG_QUEUE_NUM = 0x038,
    REG_QUEUE_READY = 0x044,
    REG_INTERRUPT_STATUS = 0x060,
    REG_INTERRUPT_ACK = 0x064,
    REG_STATUS = 0x070,
    REG_QUEUE_DESC_LOW = 0x080,
    REG_QUEUE_DESC_HIGH = 0x084,
    REG_QUEUE_DRIVER_LOW = 0x090,
    REG_QUEUE_DRIVER_HIGH = 0x094,
    REG_QUEUE_DEVICE_LOW = 0x0a0,
    REG_QUEUE_DEVICE_HIGH = 0x0a4,
    REG_CONFIG_GENERATION = 0x0fc,
    REG_CONFIG = 0x100,
};

#define MAGIC  0x74726976u /* "virt" */
#define VENDOR 0x46505648u /* "HVPF" */

void virtio_mmio_init(struct virtio_mmio *d, const struct virtio_dev_ops *ops, void *dev,
                      const struct gmem *mem, void (*irq)(void *ctx, bool level), void *irq_ctx)
{
    memset(d, 0, sizeof(*d));
    d->ops = ops;
    d->dev = dev;
    d->mem = mem;
    d->irq = irq;
    d->irq_ctx = irq_ctx;
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->serve_lock, NULL);
}

void virtio_mmio_destroy(struct virtio_mmio *d)
{
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->serve_lock);
}

static void set_interrupt(struct virtio_mmio *d, uint32_t bits)
{
    bool was = d->int_status != 0;
    d->int_status |= bits;
    if (!was && d->int_status && d->irq)
        d->irq(d->irq_ctx, true);
}

/* 2.1.2: an error the driver must reset the device for, told by a configuration change. */
static void needs_reset(struct virtio_mmio *d)
{
    d->status |= VIRTIO_STATUS_DEVICE_NEEDS_RESET;
    set_interrupt(d, VIRTIO_MMIO_INT_CONFIG);
}

/* 2.4: writing 0 to Status resets the device: queues, features, interrupts. */
static void reset(struct virtio_mmio *d)
{
    bool raised = d->int_status != 0;
    d->status = d->int_status = 0;
    d->dev_features_sel = d->drv_features_sel = d->queue_sel = 0;
    d->drv_features = 0;
    memset(d->q, 0, sizeof(d->q));
    d->generation++;
    if (raised && d->irq)
        d->irq(d->irq_ctx, false);
}

static struct virtq *selected(struct virtio_mmio *d)
{
    return d->queue_sel < d->ops->nqueues && d->queue_sel < VIRTIO_MMIO_MAX_QUEUES
               ? &d->q[d->queue_sel]
               : NULL;
}

static uint32_t reg_read(struct virtio_mmio *d, uint32_t off)
{
    struct virtq *q = selected(d);
    uint64_t f;
    switch (off) {
    case REG_MAGIC:
        return MAGIC;
    case REG_VERSION:
        return 2;
    case REG_DEVICE_ID:
        return d->ops->device_id;
    case REG_VENDOR_ID:
        return VENDOR;
    case REG_DEVICE_FEATURES:
        f = d->ops->features(d->dev);
        return d->dev_features_sel == 0   ? (uint32_t)f
               : d->dev_features_sel == 1 ? (uint32_t)(f >> 32)
                                          : 0;
    case REG_QUEUE_NUM_MAX:
        return q ? VIRTQ_MAX_SIZE : 0;
    case REG_QUEUE_READY:
        return q && q->ready;
    case REG_INTERRUPT_STATUS:
        return d->int_status;
    case REG_STATUS:
        return d->status;
    case REG_CONFIG_GENERATION:
        return d->config_generation;
    default:
        return 0;
    }
}

/* 3.1.1: the driver accepts a subset of the device's features, with VIRTIO_F_VERSION_1 (a
 * version 2 MMIO device has no legacy interface, 4.2.4). */
static bool features_ok(const struct virtio_mmio *d)
{
    uint64_t offered = d->ops->features(d->dev);
    return !(d->drv_features & ~offered) && (d->drv_features & (1ull << 32));
}

static void set_status(struct virtio_mmio *d, uint32_t v)
{
    if (v == 0) {
        reset(d);
        return;
    }
    if ((v & VIRTIO_STATUS_FEATURES_OK) && !(d->status & VIRTIO_STATUS_FEATURES_OK) &&
        !features_ok(d))
        v &= ~VIRTIO_STATUS_FEATURES_OK; /* 3.1.1: read back without it: refused */
    d->status = v | (d->status & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
}

/* 3.1.1: the device works for a driver only after it set DRIVER_OK, and FEATURES_OK was
 * accepted (a refused FEATURES_OK reads back clear: such a driver is not served). */
static bool operational(const struct virtio_mmio *d, uint32_t index)
{
    const uint32_t need = VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FEATURES_OK;
    return index < d->ops->nqueues && index < VIRTIO_MMIO_MAX_QUEUES &&
           (d->status & need) == need && !(d->status & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
}

/* Serve queue `index`: under the registers' lock take one request, without it serve it, under
 * it again return it (unless a reset came between) and raise the interrupt; until the queue is
 * empty, the device stops working, or the device abandons a request (the VM is stopping). */
static void notify(struct virtio_mmio *d, uint32_t index)
{
    pthread_mutex_lock(&d->serve_lock);
    for (;;) {
        pthread_mutex_lock(&d->lock);
        if (!operational(d, index)) {
            pthread_mutex_unlock(&d->lock);
            break;
        }
        int rc = d->ops->pop(d->dev, index, &d->q[index], d->mem);
        uint64_t gen = d->generation;
        if (rc < 0)
            needs_reset(d);
        pthread_mutex_unlock(&d->lock);
        if (rc <= 0)
            break;
        uint16_t head;
        int64_t written = d->ops->serve(d->dev, &head);
        if (written < 0)
            break;
        pthread_mutex_lock(&d->lock);
        if (gen == d->generation && operational(d, index)) {
            struct virtq *q = &d->q[index];
            if (!virtq_push(q, d->mem, head, (uint32_t)written))
                needs_reset(d);
            else if (virtq_wants_interrupt(q, d->mem))
                set_interrupt(d, VIRTIO_MMIO_INT_VRING);
        }
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_unlock(&d->serve_lock);
}

int virtio_mmio_fill(struct virtio_mmio *d, uint32_t index, struct virtq_req *r,
                     int64_t (*fill)(void *ctx, const struct virtq_req *r), void *ctx)
{
    pthread_mutex_lock(&d->lock);
    int rc = -1;
    if (operational(d, index)) {
        struct virtq *q = &d->q[index];
        rc = virtq_pop(q, d->mem, r);
        if (rc < 0) {
            needs_reset(d);
        } else if (rc > 0) {
            int64_t written = fill(ctx, r);
            if (!virtq_push(q, d->mem, r->head, written < 0 ? 0 : (uint32_t)written)) {
                needs_reset(d);
                rc = -1;
            } else if (virtq_wants_interrupt(q, d->mem)) {
                set_interrupt(d, VIRTIO_MMIO_INT_VRING);
            }
        }
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

static void set_half(uint64_t *v, bool high, uint32_t x)
{
    *v = high ? (*v & 0xffffffffull) | (uint64_t)x << 32 : (*v & ~0xffffffffull) | x;
}

static void reg_write(struct virtio_mmio *d, uint32_t off, uint32_t v)
{
    struct virtq *q = selected(d);
    /* 4.2.3.2: the queue's layout may change only while it is not ready. */
    struct virtq *setup = q && !q->ready ? q : NULL;
    switch (off) {
    case REG_DEVICE_FEATURES_SEL:
        d->dev_features_sel = v;
        break;
    case REG_DRIVER_FEATURES:
        if (d->drv_features_sel < 2 && !(d->status & VIRTIO_STATUS_FEATURES_OK))
            set_half(&d->drv_features, d->drv_features_sel == 1, v);
        break;
    case REG_DRIVER_FEATURES_SEL:
        d->drv_features_sel = v;
        break;
    case REG_QUEUE_SEL:
        d->queue_sel = v;
        break;
    case REG_QUEUE_NUM:
        if (setup)
            setup->size = v <= VIRTQ_MAX_SIZE ? (uint16_t)v : 0; /* 0: refused at enable */
        break;
    case REG_QUEUE_READY:
        if (q && v == 0) {
            q->ready = false;
        } else if (setup && v == 1 && !virtq_enable(setup, d->mem)) {
            needs_reset(d);
        }
        break;
    case VIRTIO_MMIO_QUEUE_NOTIFY: /* served by virtio_mmio_access, outside the lock */
        break;
    case REG_INTERRUPT_ACK:
        d->int_status &= ~v;
        if (!d->int_status && d->irq)
            d->irq(d->irq_ctx, false);
        break;
    case REG_STATUS:
        set_status(d, v);
        break;
    case REG_QUEUE_DESC_LOW:
    case REG_QUEUE_DESC_HIGH:
        if (setup)
            set_half(&setup->desc, off == REG_QUEUE_DESC_HIGH, v);
        break;
    case REG_QUEUE_DRIVER_LOW:
    case REG_QUEUE_DRIVER_HIGH:
        if (setup)
            set_half(&setup->avail, off == REG_QUEUE_DRIVER_HIGH, v);
        break;
    case REG_QUEUE_DEVICE_LOW:
    case REG_QUEUE_DEVICE_HIGH:
        if (setup)
            set_half(&setup->used, off == REG_QUEUE_DEVICE_HIGH, v);
        break;
    default:
        break; /* read-only or reserved: ignored */
    }
}

void virtio_mmio_notify(struct virtio_mmio *d, uint32_t index)
{
    notify(d, index);
}

void virtio_mmio_access(struct virtio_mmio *d, uint32_t off, bool is_write, uint8_t *data,
                        unsigned len)
{
    if (!is_write)
        memset(data, 0, len);
    if (off >= VIRTIO_MMIO_SIZE || len == 0 || len > 8 || len > VIRTIO_MMIO_SIZE - off)
        return;
    if (is_write && off == VIRTIO_MMIO_QUEUE_NOTIFY && len == 4) {
        uint32_t v;
        memcpy(&v, data, 4);
        notify(d, v);
        return;
    }
    pthread_mutex_lock(&d->lock);
    if (off >= REG_CONFIG) {
        /* 4.2.2.2: the configuration space at any width; the block device's is read-only. */
        if (!is_write)
            d->ops->config_read(d->dev, off - REG_CONFIG, data, len);
    } else if (len == 4 && off % 4 == 0) {
        /* 4.2.2.2: control registers are 32 bits wide and aligned; anything else is ignored. */
        if (is_write) {
            uint32_t v;
            memcpy(&v, data, 4);
            reg_write(d, off, v);
        } else {
            uint32_t v = reg_read(d, off);
            memcpy(data, &v, 4);
        }
    }
    pthread_mutex_unlock(&d->lock);
}
