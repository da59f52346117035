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
 * such writers, or a writer and a read-only device, refuse each other. hvprof's private
 * overlay never writes the image and shares everything, as `qemu-img -U` does: it may read an
 * image another VM writes (what it reads may then be inconsistent, which the overlay's user
 * asked for). */
#pragma once

#include "common/err.h"
#include "vmm/virtio/blk.h"

/* Take the locks of `mode` on fd (the image, opened) and check that no other user conflicts.
 * 0, or -1 with a message naming the conflict. */
int image_lock(int fd, const char *path, enum virtio_blk_mode mode, struct hv_err *err);
