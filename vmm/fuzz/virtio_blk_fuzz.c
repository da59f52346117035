/* libFuzzer target: a guest's virtqueue is untrusted input. The input is the guest's RAM (the
 * first 64 KiB; descriptors, rings, request headers and buffers all come from it) and the
 * queue's layout (its last 8 bytes: size, and the descriptor table's, available and used rings'
 * offsets in 4 KiB pages); the virtio block device serves every request against a 64 KiB raw
 * image. Nothing may be touched outside RAM, and the queue either serves or breaks. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm/virtio/blk.h"

#define RAM (64u * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char image[] = "/tmp/hvprof-virtio-fuzz-XXXXXX";

static void remove_image(void)
{
    unlink(image);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int made;
    if (!made) {
        int fd = mkstemp(image);
        if (fd < 0 || ftruncate(fd, RAM) < 0)
            abort();
        close(fd);
        atexit(remove_image);
        made = 1;
    }
    uint8_t *ram = calloc(1, RAM);
    if (!ram)
        return 0;
    memcpy(ram, data, size < RAM ? size : RAM);
    uint8_t layout[8] = {0};
    if (size >= 8)
        memcpy(layout, data + size - 8, 8);
    struct gmem m;
    gmem_init(&m);
    struct hv_err err;
    if (gmem_add(&m, 0, RAM, ram, &err) < 0)
        abort();
    struct virtq q = {.size = (uint16_t)(1u << (layout[0] % 10)),
                      .desc = (uint64_t)(layout[1] % 16) * 4096 + (layout[4] & 0x30),
                      .avail = (uint64_t)(layout[2] % 16) * 4096 + (layout[5] & 0x3e),
                      .used = (uint64_t)(layout[3] % 16) * 4096 + (layout[6] & 0x3c),
                      .last_avail = layout[7]};
    struct virtio_blk *b = calloc(1, sizeof(*b));
    if (b && virtio_blk_open(b, image, (enum virtio_blk_mode)(layout[7] % 3), NULL, &err) == 0) {
        if (virtq_enable(&q, &m)) {
            q.last_avail = layout[7]; /* a device resumed mid-ring */
            for (int round = 0; round < 3; round++)
                if (virtio_blk_process(b, &q, &m) < 0 && !q.broken)
                    abort(); /* a failure always breaks the queue */
        }
        virtio_blk_close(b);
    }
    free(b);
    free(ram);
    return 0;
}
