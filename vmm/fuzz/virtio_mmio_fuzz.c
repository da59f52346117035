/* libFuzzer target: a guest's accesses to a virtio-MMIO block device's registers are untrusted
 * input, and so is the RAM its queues live in. Records of 8 bytes: offset (2, LE), flags (1:
 * bit 0 write, bits 1-2 width 1/2/4/8, bit 3 "store into guest RAM instead"), pad, value (4).
 * A RAM store puts the value at 4 * offset in the guest's 256 KiB, so the input can build
 * descriptors and rings and then notify. The device either serves or breaks its queue. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm/virtio/blk.h"
#include "vmm/virtio/mmio.h"

#define RAM (256u * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char image[] = "/tmp/hvprof-mmio-fuzz-XXXXXX";

static void irq(void *ctx, bool level)
{
    (void)ctx;
    (void)level;
}

static void remove_image(void)
{
    unlink(image);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int made;
    if (!made) {
        int fd = mkstemp(image);
        if (fd < 0 || ftruncate(fd, 64 * 1024) < 0)
            abort();
        close(fd);
        atexit(remove_image);
        made = 1;
    }
    uint8_t *ram = calloc(1, RAM);
    struct virtio_blk *b = calloc(1, sizeof(*b));
    struct virtio_mmio *d = calloc(1, sizeof(*d));
    struct gmem m;
    struct hv_err err;
    gmem_init(&m);
    if (!ram || !b || !d || gmem_add(&m, 0, RAM, ram, &err) < 0 ||
        virtio_blk_open(b, image, VIRTIO_BLK_RW, NULL, &err) < 0)
        goto out;
    virtio_mmio_init(d, &virtio_blk_ops, b, &m, irq, NULL);
    for (size_t off = 0; off + 8 <= size; off += 8) {
        uint16_t reg = (uint16_t)(data[off] | data[off + 1] << 8);
        uint8_t flags = data[off + 2];
        uint8_t val[8] = {0};
        memcpy(val, data + off + 4, 4);
        if (flags & 8) {
            memcpy(ram + (4u * reg) % (RAM - 4), val, 4);
            continue;
        }
        static const unsigned widths[4] = {1, 2, 4, 8};
        virtio_mmio_access(d, reg, flags & 1, val, widths[(flags >> 1) & 3]);
    }
    for (unsigned q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
        if (d->q[q].ready && d->q[q].broken)
            abort(); /* a broken queue is never left ready */
    virtio_mmio_destroy(d);
    virtio_blk_close(b);
out:
    free(d);
    free(b);
    free(ram);
    return 0;
}
