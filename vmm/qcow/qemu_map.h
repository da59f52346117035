/* Where a qcow2 image's data lies, from QEMU's own reading of its tables (`qemu-img map
 * --output=json` of the image and its backing chain, a process of its own): extents of the
 * virtual disk that read as zeros, and extents stored uncompressed at a known offset of one
 * file of the chain, which hvprof reads with pread() as a raw image is read, without libqcow's
 * copies through its own buffers (bench/side-by-side/issue-30-qcow2.md: 3x a raw read at
 * 64 KiB and more). What the map does not hold (compressed clusters, whatever QEMU cannot map)
 * is read through libqcow. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define QCOW_MAP_SECONDS 120
/* QEMU prints about 100 bytes an extent; 64 MiB holds ~600,000 of them, far more than an
 * image of clusters in order has (a cloud image: a few thousand). An image past it is read
 * through libqcow alone. */
#define QCOW_MAP_MAX_OUTPUT (64u << 20)

enum qcow_extent_kind {
    QCOW_EXTENT_ZERO, /* reads as zeros (unallocated in the whole chain, or a zero cluster) */
    QCOW_EXTENT_DATA, /* stored as is at `offset` of the chain's file `depth` */
};

struct qcow_extent {
    uint64_t start, length; /* in the virtual disk */
    uint64_t offset;        /* QCOW_EXTENT_DATA: in the file */
    uint32_t depth;         /* QCOW_EXTENT_DATA: 0 the image, 1 its backing file, ... */
    enum qcow_extent_kind kind;
};

struct qcow_map {
    struct qcow_extent *v; /* in order of start, none overlapping */
    size_t n;
};

/* Parse QEMU's JSON map of a disk of `size` bytes whose chain has `depths` files of
 * `file_sizes` bytes: extents in order, each within the disk and, for data, within its file;
 * extents neither zero nor at a known offset are left out. 0, or -1 with err (the whole map
 * refused: nothing of it is used). */
int qcow_map_parse(struct qcow_map *m, const char *json, size_t len, uint64_t size,
                   const uint64_t *file_sizes, unsigned depths, struct hv_err *err);

/* Run QEMU's map of the image at `path` (with its backing chain) and parse it. */
int qcow_map_of(struct qcow_map *m, const char *path, uint64_t size, const uint64_t *file_sizes,
                unsigned depths, struct hv_err *err);

/* The extent holding byte `off`, or the first after it (NULL: none). */
const struct qcow_extent *qcow_map_find(const struct qcow_map *m, uint64_t off);

void qcow_map_free(struct qcow_map *m);
