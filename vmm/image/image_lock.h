/* Disk images locked the way QEMU locks them, so that QEMU and hvprof each see the other
 * (QEMU's block/file-posix.c, "raw_apply_lock_bytes"; the scheme is QEMU's documented image
 * locking, docs/virtio.md "Locks"). Open file description (OFD) locks, one byte each, all
 * shared (read) locks:
 *
 *   byte 100 + i   held by whoever uses permission i
 *   byte 200 + i   held by whoever does not let others use permission i
 *
 * with i: 0 consistent read, 1 write, 2 write of unchanged data, 3 resize (QEMU's
 * BLK_PERM_* bits 0x1, 0x2, 0x4, 0x8). A user conflicts with another when it uses a
 * permission the other does not share, or does not share one the other uses; the test is
 * F_OFD_GETLK with a write lock on the other's byte (QEMU's qemu_lock_fd_test).
 *
 * A VM that writes its disk (QEMU's default, and hvprof's read-write --disk) uses consistent
 * read, write and write-unchanged and shares only consistent read and write-unchanged: two
 * such writers, or a writer and a reader, refuse each other. A reader (a read-only device, and
 * every file of a qcow2 chain: hvprof maps where a qcow2 image's data lies once, at open, so
 * nobody may write or resize any file of the chain under it) uses consistent read and shares
 * consistent read and write-unchanged, as QEMU's read-only drives and backing files do. A raw
 * image behind hvprof's private overlay is never written and shares everything, as `qemu-img
 * -U` does: it may read a raw image another VM writes (what it reads may then be
 * inconsistent, which the overlay's user asked for; nothing of another file can appear). */
#pragma once

#include "common/err.h"

enum image_lock_mode {
    IMAGE_LOCK_WRITE,     /* the guest writes the image */
    IMAGE_LOCK_READ,      /* read, and nobody else may write or resize it meanwhile */
    IMAGE_LOCK_SHARE_ALL, /* read only, anything shared (a raw image behind the overlay) */
};

/* Take the locks of `mode` on fd (the image, opened) and check that no other user conflicts.
 * 0, or -1 with a message naming the conflict. */
int image_lock(int fd, const char *path, enum image_lock_mode mode, struct hv_err *err);
