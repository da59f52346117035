/* What diskfs.c, probe.c and ext.c share; private to diskfs/. */
#pragma once

#include "diskfs/diskfs.h"

struct struct_io_manager;

/* Add the volumes of image `path` (disk number `disk`): its partitions, or the whole disk when
 * it has no partition table. */
int diskfs_probe_image(struct diskfs *d, unsigned disk, const char *path, struct hv_err *err);
/* The same for a qcow image (the partition tables and superblocks libblkid reads come through
 * the image's own reader). */
int diskfs_probe_qcow(struct diskfs *d, unsigned disk, struct qcow_image *q, struct hv_err *err);

/* Open v (found on image `path`; `qcow` when that is a qcow image, else NULL) with libext2fs,
 * read-only; on failure v->why says why. */
void diskfs_ext_open(struct diskfs_volume *v, const char *path, struct qcow_image *qcow);

/* libext2fs's view of [off, off + size) of a qcow image: an io_manager whose channels read
 * through vmm/qcow (ext_qcow_io.c). The name given to ext2fs_open2 is diskfs_qcow_io_name's. */
extern struct struct_io_manager diskfs_qcow_io_manager;
struct diskfs_qcow_range {
    struct qcow_image *qcow;
    uint64_t off, size;
};
/* The channel name that makes diskfs_qcow_io_manager read range r (which must outlive the
 * file system opened with it: a volume's `io`). */
void diskfs_qcow_io_name(const struct diskfs_qcow_range *r, char *name, size_t len);
void diskfs_ext_close(struct diskfs_volume *v);
