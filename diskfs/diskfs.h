/* Files of the disks hvprof serves, read by inode (docs/diskfs.md): the guest's memory says which
 * file a page caches (struct page -> mapping -> host inode: i_ino, and the file system's UUID in
 * its super block; guestos/linux/pagefile.h), and the bytes come from the disk image itself,
 * read-only, so that unwind tables and symbols of pages the guest never read are there too.
 *
 * What a disk holds is found with util-linux's libblkid (partition tables, file system types and
 * UUIDs); ext2, ext3 and ext4 are read with e2fsprogs' libext2fs. Other file systems are listed
 * with their type, for the summary to say why their files are not read.
 *
 * The images are the user's and the guest writes them while it runs: every read is bounded,
 * a file system is opened with libext2fs's own checks, and a reader uses what it gets only
 * after checking it against guest memory (the build-id). Blocks are not cached here, so a read
 * sees what is in the image at that moment. One thread at a time (libext2fs is not thread-safe:
 * the drain thread is the only reader). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/vector.h"
#include "vmm/image/format.h"

#define DISKFS_MAX_VOLUMES 64 /* partitions and whole-disk file systems kept, over all disks */

struct qcow_image;

/* One file system (or unreadable partition) on one image. */
struct diskfs_volume {
    char where[48];   /* "disk 0", "disk 0 partition 1" */
    char type[16];    /* libblkid's TYPE ("ext4", "vfat", "xfs"), "" when unknown */
    uint8_t uuid[16]; /* the file system's UUID (ext*: s_uuid), when has_uuid */
    bool has_uuid;
    uint64_t offset, size; /* in the image, bytes */
    void *fs;              /* ext2_filsys when the volume is readable, else NULL */
    char why[96];          /* why it is not readable */
    unsigned disk;         /* which of diskfs_open's images */
    void *io;              /* a qcow image's range for libext2fs (ext_qcow_io.c), else NULL */
};

struct diskfs {
    VECTOR(struct diskfs_volume) vols;
    /* Per image: its qcow image (vmm/qcow), NULL for a raw one. */
    VECTOR(struct qcow_image *) qcow;
};

/* Find the file systems of n disk images, raw or qcow2 (with their backing chains). A disk with
 * no recognizable content gives no volume; a qcow2 image that cannot be read gives one that
 * says why. opts[i] (NULL: none) is each image's format and chain rules, as the block device
 * takes them. -1 only when an image cannot be opened at all or memory runs out (err). */
int diskfs_open(struct diskfs *d, const char *const *images, const struct image_opts *opts,
                unsigned n, struct hv_err *err);
void diskfs_close(struct diskfs *d);

/* The readable volume whose UUID is `uuid` (the guest super block's s_uuid), NULL if none. */
struct diskfs_volume *diskfs_find_uuid(struct diskfs *d, const uint8_t uuid[16]);

/* The size of regular file `ino`. HV_ERR_CORRUPT when ino is out of the file system's range or
 * not a regular file. */
int diskfs_file_size(struct diskfs_volume *v, uint64_t ino, uint64_t *size, struct hv_err *err);

/* Up to len bytes of regular file `ino` from offset `off`; *got is short at the file's end. */
int diskfs_read(struct diskfs_volume *v, uint64_t ino, uint64_t off, void *buf, size_t len,
                size_t *got, struct hv_err *err);

/* What was found, one line per volume ("disk 0 partition 1: ext4, read by inode"), for the
 * summary; returns the length written (truncated to len). */
size_t diskfs_describe(const struct diskfs *d, char *buf, size_t len);

/* The inode of `path` (absolute, on volume v), following symbolic links as the boot loader
 * does: 0, 1 when there is no such file, -1 when the file system cannot be read (err). */
int diskfs_lookup(struct diskfs_volume *v, const char *path, uint64_t *ino, struct hv_err *err);

/* Regular file `path` whole into a malloc'd buffer (NUL-terminated past *len), at most `max`
 * bytes: a larger file is HV_ERR_LIMIT. */
int diskfs_read_path(struct diskfs_volume *v, const char *path, size_t max, uint8_t **buf,
                     size_t *len, struct hv_err *err);

/* The names in directory `path` (no "." or ".."), at most `max`, each a malloc'd string into
 * names[]; *n says how many. */
int diskfs_list_dir(struct diskfs_volume *v, const char *path, char **names, unsigned max,
                    unsigned *n, struct hv_err *err);
