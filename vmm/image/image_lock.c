/* QEMU's image locks, taken and tested (image_lock.h has the scheme). */
#include "vmm/image/image_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>

#define PERM_BASE   100
#define SHARED_BASE 200
#define PERM_COUNT  4 /* consistent read, write, write unchanged, resize */

enum {
    PERM_CONSISTENT_READ = 1u << 0,
    PERM_WRITE = 1u << 1,
    PERM_WRITE_UNCHANGED = 1u << 2,
    PERM_RESIZE = 1u << 3,
    PERM_ALL = (1u << PERM_COUNT) - 1,
};

static const char *const perm_names[PERM_COUNT] = {"read it consistently", "write it",
                                                   "write unchanged data", "resize it"};

/* 1 if another open file description holds a lock on `byte`, 0 if not, -1 on error. */
static int held_by_other(int fd, off_t byte)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
        return -1;
    return fl.l_type != F_UNLCK;
}

static int lock_byte(int fd, off_t byte)
{
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &fl);
}

int image_lock(int fd, const char *path, enum image_lock_mode mode, struct hv_err *err)
{
    unsigned perm, shared;
    switch (mode) {
    case IMAGE_LOCK_WRITE:
        perm = PERM_CONSISTENT_READ | PERM_WRITE | PERM_WRITE_UNCHANGED;
        shared = PERM_CONSISTENT_READ | PERM_WRITE_UNCHANGED;
        break;
    case IMAGE_LOCK_READ: /* as QEMU's read-only drive and backing file: nobody writes under it */
        perm = PERM_CONSISTENT_READ;
        shared = PERM_CONSISTENT_READ | PERM_WRITE_UNCHANGED;
        break;
    default: /* a raw image behind the private overlay: reads only, shares everything */
        perm = 0;
        shared = PERM_ALL;
        break;
    }
    /* What helps: a writer can fall back to the overlay on a raw image; a reader cannot. */
    const char *hint = mode == IMAGE_LOCK_WRITE
                           ? "; --disk IMAGE,readonly reads it with the guest's writes in a "
                             "private overlay"
                           : "; stop the VM that uses it, or profile a copy";
    /* Ours first, then the test: two starting at once both see the other. */
    for (unsigned i = 0; i < PERM_COUNT; i++) {
        if (((perm >> i) & 1) && lock_byte(fd, PERM_BASE + i) < 0)
            goto lock_error;
        if (!((shared >> i) & 1) && lock_byte(fd, SHARED_BASE + i) < 0)
            goto lock_error;
    }
    for (unsigned i = 0; i < PERM_COUNT; i++) {
        int r;
        if ((perm >> i) & 1) {
            if ((r = held_by_other(fd, SHARED_BASE + i)) < 0)
                goto lock_error;
            if (r)
                return hv_errf(err,
                               "%s: another process (a running VM, QEMU or hvprof) does not let "
                               "others %s (its image lock): not opened%s",
                               path, perm_names[i], hint);
        }
        if (!((shared >> i) & 1)) {
            if ((r = held_by_other(fd, PERM_BASE + i)) < 0)
                goto lock_error;
            if (r)
                return hv_errf(err,
                               "%s: another process (a running VM, QEMU or hvprof) may %s "
                               "(its image lock), which this disk cannot share: not opened%s",
                               path, perm_names[i], hint);
        }
    }
    return 0;
lock_error:
    /* File systems without POSIX locks (some network ones): QEMU goes on there too. */
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL)
        return 0;
    return hv_errf(err, "%s: cannot lock it: %s", path, strerror(errno));
}
