/* What a disk image holds, from util-linux's libblkid: its partition table (MBR or GPT, with
 * the start and size of each partition in 512-byte sectors, as libblkid gives them) and each
 * partition's file system type and UUID. An image with no partition table is probed as one
 * file system. */
#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskfs/diskfs_priv.h"

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

int diskfs_probe_image(struct diskfs *d, unsigned disk, const char *path, struct hv_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hv_errk(err, HV_ERR_OS, "%s: %s", path, strerror(errno));
    struct stat st;
    uint64_t image_size = 0;
    if (fstat(fd, &st) == 0)
        image_size = S_ISBLK(st.st_mode) ? (uint64_t)blkid_get_dev_size(fd) : (uint64_t)st.st_size;
    /* A qcow2 image (its magic, QEMU's docs/interop/qcow2.txt): libblkid and libext2fs read raw
     * images; its files come from the guest's page cache instead (docs/page-cache.md). */
    uint8_t magic[4] = {0};
    if (pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
        !memcmp(magic, "QFI\xfb", 4)) {
        struct diskfs_volume v = {.size = image_size};
        snprintf(v.where, sizeof(v.where), "disk %u", disk);
        snprintf(v.why, sizeof(v.why),
                 "a qcow2 image: its files come from the guest's page cache instead");
        close(fd);
        return add_volume(d, &v, err);
    }
    int rc = 0;
    blkid_probe pr = blkid_new_probe();
    blkid_partlist parts = NULL;
    if (pr && blkid_probe_set_device(pr, fd, 0, 0) == 0)
        parts = blkid_probe_get_partitions(pr);
    int nparts = parts ? blkid_partlist_numof_partitions(parts) : 0;
    for (int i = 0; i < nparts && rc == 0; i++) {
        blkid_partition p = blkid_partlist_get_partition(parts, i);
        if (!p || blkid_partition_is_extended(p))
            continue; /* an MBR's extended partition holds others, not a file system */
        /* libblkid counts in 512-byte sectors whatever the table's own unit. */
        uint64_t off = (uint64_t)blkid_partition_get_start(p) * 512;
        uint64_t size = (uint64_t)blkid_partition_get_size(p) * 512;
        struct diskfs_volume v = {.offset = off, .size = size};
        snprintf(v.where, sizeof(v.where), "disk %u partition %d", disk,
                 blkid_partition_get_partno(p));
        if (off >= image_size || size > image_size - off)
            snprintf(v.why, sizeof(v.why), "outside the image (%" PRIu64 " bytes)", image_size);
        else if (!probe_range(fd, off, size, &v))
            snprintf(v.why, sizeof(v.why), "no file system found");
        rc = add_volume(d, &v, err);
    }
    if (nparts <= 0) {
        struct diskfs_volume v = {.offset = 0, .size = image_size};
        snprintf(v.where, sizeof(v.where), "disk %u", disk);
        if (probe_range(fd, 0, image_size, &v))
            rc = add_volume(d, &v, err);
    }
    if (pr)
        blkid_free_probe(pr);
    close(fd);
    return rc;
}
