/* A virtio block device's requests (VIRTIO 1.2 section 5.2) against a raw image file, apart from
 * any transport: the transport hands it the request queue and raises the interrupt when asked.
 * Every request is answered: data read or written at its sector, a flush that reaches the disk
 * (fdatasync), the device id; a request past the end of the disk, of an unknown type or
 * malformed gets VIRTIO_BLK_S_IOERR or _UNSUPP, and a host I/O error is reported to the guest as
 * VIRTIO_BLK_S_IOERR, never dropped. A read-only disk answers writes with IOERR; a disk with a
 * private overlay never writes its image: what the guest writes goes to an unlinked temporary
 * file, read back in its place, and is gone when the device closes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/image/format.h"
#include "vmm/virtio/device.h"
#include "vmm/virtio/virtq.h"

/* 5.2.3: feature bits this device offers. */
#define VIRTIO_BLK_F_SEG_MAX  2
#define VIRTIO_BLK_F_RO       5
#define VIRTIO_BLK_F_BLK_SIZE 6
#define VIRTIO_BLK_F_FLUSH    9
#define VIRTIO_F_VERSION_1    32 /* 6: a modern (1.x) device */

/* 5.2.6: request types and status values. */
#define VIRTIO_BLK_T_IN     0
#define VIRTIO_BLK_T_OUT    1
#define VIRTIO_BLK_T_FLUSH  4
#define VIRTIO_BLK_T_GET_ID 8
#define VIRTIO_BLK_S_OK     0
#define VIRTIO_BLK_S_IOERR  1
#define VIRTIO_BLK_S_UNSUPP 2

#define VIRTIO_BLK_SECTOR   512u
#define VIRTIO_BLK_ID_BYTES 20u
/* A request's data moves at most this much per system call, with a stop check between: one
 * request may ask for 64 segments of up to 4 GiB each (a guest's own choice). */
#define VIRTIO_BLK_SLICE (1u << 20)

enum virtio_blk_mode {
    VIRTIO_BLK_RW,      /* the guest reads and writes the image */
    VIRTIO_BLK_RO,      /* a read-only device (VIRTIO_BLK_F_RO): writes answered with IOERR */
    VIRTIO_BLK_OVERLAY, /* image opened read-only; the guest's writes kept in a private overlay */
};

/* The overlay's unit: a block is copied from the image the first time a write covers part of
 * it, so the bitmap costs one bit per 4 KiB of disk (32 MiB for 1 TiB). */
#define VIRTIO_BLK_OVERLAY_BLOCK 4096u

struct qcow_image;

struct virtio_blk {
    int fd; /* the image, opened by virtio_blk_open */
    /* A qcow2 image (vmm/qcow/qcow_image.h): its data read through libqcow, never written
     * (the guest's writes go to the overlay); NULL for a raw image. */
    struct qcow_image *qcow;
    char format[160]; /* "raw", or the qcow image's description */
    enum virtio_blk_mode mode;
    int overlay_fd;          /* VIRTIO_BLK_OVERLAY: the unlinked temporary file, else -1 */
    uint8_t *overlay_dirty;  /* one bit per overlay block: the overlay holds it */
    uint64_t bytes;          /* the disk's size: sectors * 512 */
    uint64_t overlay_blocks; /* blocks written to the overlay (its size in use) */
    uint64_t sectors;        /* capacity in 512-byte sectors (the image's size, rounded down) */
    char id[VIRTIO_BLK_ID_BYTES]; /* GET_ID's answer: the image's base name, cut */
    /* The VM's "stopping" flag (NULL: none): a request's data moves in slices of
     * VIRTIO_BLK_SLICE bytes, and once it is set the request is abandoned between two. */
    const _Atomic bool *stop;
    /* What the device did, for the recording's summary and the tests. */
    uint64_t reads, writes, flushes, errors, bytes_read, bytes_written;
    uint64_t abandoned;   /* requests left unfinished because the VM stopped */
    /* A raw image whose format was probed: a write of a first sector that would probe as
     * another format is refused (vmm/image/format.h); how many were, and the last's format. */
    bool probed_raw;
    uint64_t sector0_refused;
    const char *sector0_format;
    bool abandoning;      /* the request being served is being abandoned */
    struct virtq_req req; /* the request being served (4 KiB: kept off the caller's stack) */
};

/* Opens a raw image (a regular file or block device) or a qcow2 image with its backing chain
 * (read through libqcow; asked for read-write, it gets the private overlay instead), in the
 * format `opts` gives (NULL or IMAGE_FORMAT_AUTO: probed here, with the sector-0 rule); other
 * formats are refused with how to convert them. An overlay's temporary file is made in $TMPDIR
 * (else /var/tmp, else /tmp where there is none): it grows to at most the disk's size. */
int virtio_blk_open(struct virtio_blk *b, const char *path, enum virtio_blk_mode mode,
                    const struct image_opts *opts, struct hv_err *err);
void virtio_blk_close(struct virtio_blk *b);

/* 64-bit feature set offered (VIRTIO_F_VERSION_1, SEG_MAX, BLK_SIZE, FLUSH, RO if read-only). */
uint64_t virtio_blk_features(const struct virtio_blk *b);

/* 5.2.4: the configuration space (capacity, seg_max, blk_size at their offsets), `len` bytes at
 * `off` into `out`; bytes past the end read as 0. */
void virtio_blk_config_read(const struct virtio_blk *b, uint32_t off, uint8_t *out, unsigned len);

/* Serves every request the driver made available on q. Returns how many were completed, -1 if
 * the queue is broken (the transport then sets DEVICE_NEEDS_RESET). Stops early, with what was
 * completed, when b->stop is set. (The transport serves with virtio_blk_ops' pop and serve,
 * which let the vCPUs use the registers while data moves.) */
int virtio_blk_process(struct virtio_blk *b, struct virtq *q, const struct gmem *m);

/* The block device for a transport (dev: a struct virtio_blk): one request queue. */
extern const struct virtio_dev_ops virtio_blk_ops;
