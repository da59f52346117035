/* What a disk image holds, from util-linux's libblkid: its partition table (MBR or GPT, with
 * the start and size of each partition in 512-byte sectors, as libblkid gives them) and each
 * partition's file system type and UUID. An image with no partition table is probed as one
 * file system. A qcow2 image is probed through its own reader (vmm/qcow). */
#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "diskfs/diskfs_priv.h"
#include "vmm/qcow/qcow_image.h"

/* A file system's type and UUID in [off, off + size) of the image on fd. False: none found. */
static bool probe_range(int fd, uint64_t off, uint64_t size, struct diskfs_volume *v)
{
    blkid_probe pr = blkid_new_probe();
    if (!pr)
        return false;
    bool found = false;
    if (blkid_probe_set_device(pr, fd, (blkid_loff_t)off, (blkid_loff_t)size) == 0 &&
        blkid_probe_enable_superblocks(pr, 1) == 0 &&
        blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUIDRAW) == 0 &&
        blkid_do_safeprobe(pr) == 0) {
        const char *val;
        size_t len;
        if (blkid_probe_lookup_value(pr, "TYPE", &val, &len) == 0) {
            snprintf(v->type, sizeof(v->type), "%s", val);
            found = true;
        }
        if (blkid_probe_lookup_value(pr, "UUID_RAW", &val, &len) == 0 && len == 16) {
            memcpy(v->uuid, val, 16);
            v->has_uuid = true;
        }
    }
    blkid_free_probe(pr);
    return found;
}

static int add_volume(struct diskfs *d, const struct diskfs_volume *v, struct hv_err *err)
{
    if (d->vols.n >= DISKFS_MAX_VOLUMES)
        return 0; /* a disk with more partitions than that: the rest are not looked at */
    if (!vec_append(&d->vols, *v))
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    return 0;
}

/* Where libblkid reads: the image's file, or for a qcow image a sparse in-memory file of the
 * virtual disk's size into which the ranges a probe reads are copied first (libblkid reads
 * only through a file descriptor). PROBE_SPAN covers what it reads: a partition table (MBR and
 * GPT at the disk's start, GPT's backup copy at its end) and a file system's superblocks (the
 * ext family's at 1 KiB, btrfs's at 64 KiB, xfs's and vfat's at 0). */
#define PROBE_SPAN (1u << 20)

struct probe_src {
    int fd;
    uint64_t size;
    struct qcow_image *qcow; /* NULL: fd is the raw image itself */
};

/* Make [off, off + len) of the disk readable through src->fd. False: the qcow image could not
 * be read there (its clusters are damaged): probe nothing in it. */
static bool probe_fill(struct probe_src *src, uint64_t off, uint64_t len)
{
    if (!src->qcow)
        return true;
    if (off >= src->size)
        return false;
    if (len > src->size - off)
        len = src->size - off;
    if (len > PROBE_SPAN)
        len = PROBE_SPAN;
    uint8_t *buf = malloc((size_t)len);
    if (!buf)
        return false;
    struct iovec iov = {buf, (size_t)len};
    struct hv_err err;
    bool ok = qcow_image_readv(src->qcow, &iov, 1, off, &err) &&
              pwrite(src->fd, buf, (size_t)len, (off_t)off) == (ssize_t)len;
    free(buf);
    return ok;
}

static int probe_volumes(struct diskfs *d, unsigned disk, struct probe_src *src, struct hv_err *err)
{
    int rc = 0;
    if (!probe_fill(src, 0, PROBE_SPAN) ||
        (src->size > PROBE_SPAN && !probe_fill(src, src->size - PROBE_SPAN, PROBE_SPAN))) {
        struct diskfs_volume v = {.size = src->size, .disk = disk};
        snprintf(v.where, sizeof(v.where), "disk %u", disk);
        snprintf(v.why, sizeof(v.why), "its partition table could not be read from the image");
        return add_volume(d, &v, err);
    }
    blkid_probe pr = blkid_new_probe();
    blkid_partlist parts = NULL;
    if (pr && blkid_probe_set_device(pr, src->fd, 0, (blkid_loff_t)src->size) == 0)
        parts = blkid_probe_get_partitions(pr);
    int nparts = parts ? blkid_partlist_numof_partitions(parts) : 0;
    for (int i = 0; i < nparts && rc == 0; i++) {
        blkid_partition p = blkid_partlist_get_partition(parts, i);
        if (!p || blkid_partition_is_extended(p))
            continue; /* an MBR's extended partition holds others, not a file system */
        /* libblkid counts in 512-byte sectors whatever the table's own unit. */
        uint64_t off = (uint64_t)blkid_partition_get_start(p) * 512;
        uint64_t size = (uint64_t)blkid_partition_get_size(p) * 512;
        struct diskfs_volume v = {.offset = off, .size = size, .disk = disk};
        snprintf(v.where, sizeof(v.where), "disk %u partition %d", disk,
                 blkid_partition_get_partno(p));
        if (off >= src->size || size > src->size - off)
            snprintf(v.why, sizeof(v.why), "outside the image (%" PRIu64 " bytes)", src->size);
        else if (!probe_fill(src, off, size) || !probe_range(src->fd, off, size, &v))
            snprintf(v.why, sizeof(v.why), "no file system found");
        rc = add_volume(d, &v, err);
    }
    if (nparts <= 0) {
        struct diskfs_volume v = {.offset = 0, .size = src->size, .disk = disk};
        snprintf(v.where, sizeof(v.where), "disk %u", disk);
        if (probe_range(src->fd, 0, src->size, &v))
            rc = add_volume(d, &v, err);
    }
    if (pr)
        blkid_free_probe(pr);
    return rc;
}

int diskfs_probe_image(struct diskfs *d, unsigned disk, const char *path, struct hv_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hv_errk(err, HV_ERR_OS, "%s: %s", path, strerror(errno));
    struct stat st;
    uint64_t image_size = 0;
    if (fstat(fd, &st) == 0)
        image_size = S_ISBLK(st.st_mode) ? (uint64_t)blkid_get_dev_size(fd) : (uint64_t)st.st_size;
    struct probe_src src = {.fd = fd, .size = image_size};
    int rc = probe_volumes(d, disk, &src, err);
    close(fd);
    return rc;
}

int diskfs_probe_qcow(struct diskfs *d, unsigned disk, struct qcow_image *q, struct hv_err *err)
{
    int fd = memfd_create("hvprof-diskfs-probe", MFD_CLOEXEC);
    if (fd < 0)
        return hv_errk(err, HV_ERR_OS, "memfd_create: %s", strerror(errno));
    struct probe_src src = {.fd = fd, .size = qcow_image_size(q), .qcow = q};
    int rc = 0;
    if (ftruncate(fd, (off_t)src.size) < 0)
        rc =
            hv_errk(err, HV_ERR_OS, "a %" PRIu64 "-byte probe file: %s", src.size, strerror(errno));
    else
        rc = probe_volumes(d, disk, &src, err);
    close(fd);
    return rc;
}
