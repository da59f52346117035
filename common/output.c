/* Outputs that never destroy data: NAME.part, renamed into place, NAME.old (output.h). */
#include "common/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The FXT magic number record (the FXT specification, "Magic number record"): 8 bytes,
 * little-endian 0x0016547846040010. */
static const uint8_t fxt_magic[8] = {0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00};

bool hv_output_is_recording(int fd)
{
    uint8_t head[8];
    return pread(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head) &&
           !memcmp(head, fxt_magic, sizeof(head));
}

/* Directory and last component of `path`. */
static int split(const char *path, char *dir, size_t dlen, char *name, size_t nlen,
                 struct hv_err *err)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return hv_errk(err, HV_ERR_USAGE, "%s: names a directory, not a file", path);
    if (strlen(base) + 6 > nlen)
        return hv_errk(err, HV_ERR_LIMIT, "%s: its name is too long", path);
    snprintf(name, nlen, "%s", base);
    if (!slash)
        snprintf(dir, dlen, ".");
    else if (slash == path)
        snprintf(dir, dlen, "/");
    else if ((size_t)(slash - path) >= dlen)
        return hv_errk(err, HV_ERR_LIMIT, "%s: path too long", path);
    else
        snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
    return 0;
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISBLK(m)  ? "a block device"
                         : "not a regular file";
}

/* A character device named by `path` (through links: /dev/stdout): written in place. */
static int open_device(struct hv_output *o, int dirfd, const char *path, struct hv_err *err)
{
    o->fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (o->fd < 0)
        return hv_errf_errno(err, "cannot open %s", path);
    int fl = fcntl(o->fd, F_GETFL);
    if (fl >= 0)
        fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK);
    o->device = o->committed = true;
    return 0;
}

int hv_output_open(struct hv_output *o, int dirfd, const char *path, unsigned flags,
                   struct hv_err *err)
{
    memset(o, 0, sizeof(*o));
    o->dirfd = o->fd = -1;
    o->flags = flags;
    snprintf(o->path, sizeof(o->path), "%s", path);
    struct stat st;
    /* A character device, reached by any name (/dev/null, /dev/stdout -> /proc/self/fd/1). */
    if (fstatat(dirfd, path, &st, 0) == 0 && S_ISCHR(st.st_mode))
        return open_device(o, dirfd, path, err);
    char dir[PATH_MAX];
    if (split(path, dir, sizeof(dir), o->name, sizeof(o->name), err) < 0)
        return -1;
    o->dirfd = openat(dirfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (o->dirfd < 0)
        return hv_errf_errno(err, "cannot create %s", path);
    /* What NAME is now, the name itself (a link is not followed). */
    if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode) && !(flags & HV_OUTPUT_FORCE)) {
            hv_errk(err, HV_ERR_USAGE,
                    "%s: a symbolic link; hvprof replaces it, never writes through it: --force "
                    "to replace it",
                    path);
            goto fail;
        }
        if (!S_ISLNK(st.st_mode) && !S_ISREG(st.st_mode)) {
            hv_errk(err, HV_ERR_USAGE, "%s: %s, not a file hvprof can write", path,
                    S_ISFIFO(st.st_mode) ? "a FIFO" : kind_of(st.st_mode));
            goto fail;
        }
        if (S_ISREG(st.st_mode) && st.st_size > 0) {
            int old = openat(o->dirfd, o->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            bool rec = old >= 0 && hv_output_is_recording(old);
            /* Another hvprof writing it holds its lock: leave it alone. */
            bool busy = old >= 0 && flock(old, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
            if (old >= 0)
                close(old);
            if (busy) {
                hv_errk(err, HV_ERR_USAGE, "%s: another process is writing it (locked); not touched",
                        path);
                goto fail;
            }
            if (!(rec && (flags & HV_OUTPUT_RECORDING)) && !(flags & HV_OUTPUT_FORCE)) {
                hv_errk(err, HV_ERR_USAGE,
                        "%s exists and is not %s: not overwritten (--force replaces it)", path,
                        flags & HV_OUTPUT_RECORDING ? "an hvprof recording (which would be kept "
                                                      "as .old)"
                                                    : "empty");
                goto fail;
            }
            o->kept_old = rec && (flags & HV_OUTPUT_RECORDING);
        }
    } else if (errno != ENOENT) {
        hv_errf_errno(err, "%s", path);
        goto fail;
    }
    snprintf(o->part, sizeof(o->part), "%s.part", o->name);
    o->fd = openat(o->dirfd, o->part,
                   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
    if (o->fd < 0) {
        if (errno == EEXIST)
            hv_errk(err, HV_ERR_USAGE,
                    "%s.part exists: another hvprof is writing %s, or one was stopped before "
                    "it finished (remove %s.part)",
                    path, path, path);
        else
            hv_errf_errno(err, "cannot create %s", path);
        o->part[0] = 0;
        goto fail;
    }
    if (flock(o->fd, LOCK_EX | LOCK_NB) < 0) { /* ours alone: O_EXCL made it */
        hv_errf_errno(err, "%s: lock", path);
        goto fail;
    }
    return 0;
fail:
    hv_output_discard(o);
    hv_output_close(o);
    return -1;
}

int hv_output_commit(struct hv_output *o, struct hv_err *err)
{
    if (o->committed)
        return 0;
    if (o->kept_old) {
        char old[NAME_MAX + 8];
        snprintf(old, sizeof(old), "%s.old", o->name);
        if (renameat(o->dirfd, o->name, o->dirfd, old) < 0 && errno != ENOENT)
            return hv_errf_errno(err, "%s: keeping the previous recording as %s.old", o->path,
                                 o->path);
    }
    /* rename() replaces whatever NAME is (a link too) and never writes through it. */
    if (renameat(o->dirfd, o->part, o->dirfd, o->name) < 0)
        return hv_errf_errno(err, "%s: renaming %s into place", o->path, o->part);
    o->committed = true;
    return 0;
}

void hv_output_discard(struct hv_output *o)
{
    if (!o->committed && o->part[0] && o->dirfd >= 0)
        unlinkat(o->dirfd, o->part, 0);
    o->part[0] = 0;
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
}

void hv_output_close(struct hv_output *o)
{
    if (o->fd >= 0)
        close(o->fd);
    if (o->dirfd >= 0)
        close(o->dirfd);
    o->fd = o->dirfd = -1;
}
