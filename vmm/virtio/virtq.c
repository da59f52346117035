#include "vmm/virtio/virtq.h"

#include <string.h>

/* 2.7.5, 2.7.6, 2.7.8: the parts' sizes for a queue of n entries (ring flags and index, the
 * ring, the trailing event index). x86 is little-endian, as virtio 1.x's fields are. */
#define DESC_BYTES(n)  (16ull * (n))
#define AVAIL_BYTES(n) (6ull + 2ull * (n))
#define USED_BYTES(n)  (6ull + 8ull * (n))

struct desc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags, next;
};

static int broken(struct virtq *q)
{
    q->broken = true;
    q->ready = false;
    return -1;
}

bool virtq_enable(struct virtq *q, const struct gmem *m)
{
    uint16_t n = q->size;
    if (n == 0 || n > VIRTQ_MAX_SIZE || (n & (n - 1)) || q->desc % 16 || q->avail % 2 ||
        q->used % 4 || !gmem_ptr(m, q->desc, DESC_BYTES(n)) ||
        !gmem_ptr(m, q->avail, AVAIL_BYTES(n)) || !gmem_ptr(m, q->used, USED_BYTES(n))) {
        broken(q);
        return false;
    }
    q->ready = true;
    q->broken = false;
    q->last_avail = 0;
    q->used_idx = 0;
    return true;
}

/* One descriptor, copied out of guest memory once: the guest may change it meanwhile, and only
 * the copy is checked and used. */
static void read_desc(const uint8_t *table, uint16_t i, struct desc *d)
{
    const uint8_t *p = table + 16u * i;
    memcpy(&d->addr, p, 8);
    memcpy(&d->len, p + 8, 4);
    memcpy(&d->flags, p + 12, 2);
    memcpy(&d->next, p + 14, 2);
}

int virtq_pop(struct virtq *q, const struct gmem *m, struct virtq_req *r)
{
    if (q->broken)
        return -1;
    if (!q->ready)
        return 0;
    /* Checked at enable; looked up again because the pointers are not kept. */
    const uint8_t *desc = gmem_ptr(m, q->desc, DESC_BYTES(q->size));
    uint8_t *avail = gmem_ptr(m, q->avail, AVAIL_BYTES(q->size));
    if (!desc || !avail)
        return broken(q);
    /* The driver writes the ring entries before the index (2.7.13): acquire. */
    uint16_t idx = __atomic_load_n((uint16_t *)(avail + 2), __ATOMIC_ACQUIRE);
    uint16_t pending = (uint16_t)(idx - q->last_avail);
    if (pending == 0)
        return 0;
    if (pending > q->size)
        return broken(q); /* more available than the queue holds */
    uint16_t head;
    memcpy(&head, avail + 4 + 2u * (q->last_avail % q->size), 2);
    if (head >= q->size)
        return broken(q);

    r->head = head;
    r->nseg = r->nread = 0;
    r->read_bytes = r->write_bytes = 0;
    const uint8_t *table = desc;
    unsigned entries = q->size, walked = 0;
    bool indirect = false;
    uint16_t i = head;
    for (;;) {
        /* Each descriptor at most once: a longer chain loops (2.7.5.2: no chain is longer than
         * its table). */
        if (++walked > entries)
            return broken(q);
        struct desc d;
        read_desc(table, i, &d);
        if (d.flags & VIRTQ_DESC_F_INDIRECT) {
            /* 2.7.5.3.1: one level, never with NEXT, a whole number of descriptors. */
            if (indirect || (d.flags & VIRTQ_DESC_F_NEXT) || d.len == 0 || d.len % 16 ||
                d.len / 16 > VIRTQ_MAX_SEGS)
                return broken(q);
            table = gmem_ptr(m, d.addr, d.len);
            if (!table)
                return broken(q);
            entries = d.len / 16;
            walked = 0;
            indirect = true;
            i = 0;
            continue;
        }
        if (d.len) {
            bool write = d.flags & VIRTQ_DESC_F_WRITE;
            uint8_t *host = gmem_ptr(m, d.addr, d.len);
            /* 2.7.4.2: the device-writable part follows the readable one. */
            if (!host || r->nseg == VIRTQ_MAX_SEGS || (!write && r->nseg > r->nread))
                return broken(q);
            r->seg[r->nseg++] = (struct virtq_seg){host, d.len, write};
            if (write) {
                r->write_bytes += d.len;
            } else {
                r->nread++;
                r->read_bytes += d.len;
            }
        }
        if (!(d.flags & VIRTQ_DESC_F_NEXT))
            break;
        if (d.next >= entries)
            return broken(q);
        i = d.next;
    }
    q->last_avail++;
    return 1;
}

bool virtq_push(struct virtq *q, const struct gmem *m, uint16_t head, uint32_t written)
{
    uint8_t *used = q->ready ? gmem_ptr(m, q->used, USED_BYTES(q->size)) : NULL;
    if (!used) {
        broken(q);
        return false;
    }
    uint8_t *elem = used + 4 + 8u * (q->used_idx % q->size);
    uint32_t id = head;
    memcpy(elem, &id, 4);
    memcpy(elem + 4, &written, 4);
    q->used_idx++;
    /* The element before the index the driver reads it by (2.7.8.2): release. */
    __atomic_store_n((uint16_t *)(used + 2), q->used_idx, __ATOMIC_RELEASE);
    return true;
}

bool virtq_wants_interrupt(const struct virtq *q, const struct gmem *m)
{
    const uint8_t *avail = gmem_ptr(m, q->avail, AVAIL_BYTES(q->size));
    uint16_t flags = 0;
    if (avail)
        memcpy(&flags, avail, 2);
    return !(flags & 1); /* VIRTQ_AVAIL_F_NO_INTERRUPT */
}
