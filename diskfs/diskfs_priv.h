/* What diskfs.c, probe.c and ext.c share; private to diskfs/. */
#pragma once

#include "diskfs/diskfs.h"

/* Add the volumes of image `path` (disk number `disk`): its partitions, or the whole disk when
 * it has no partition table. */
int diskfs_probe_image(struct diskfs *d, unsigned disk, const char *path, struct hv_err *err);

/* Open v (found on image `path`) with libext2fs, read-only; on failure v->why says why. */
void diskfs_ext_open(struct diskfs_volume *v, const char *path);
void diskfs_ext_close(struct diskfs_volume *v);
