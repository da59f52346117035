#include "common/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m))
        return "a character device";
    return "not a regular file";
}

static int blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

int hv_open_input(const char *path, struct hv_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return hv_errf_errno(err, "%s", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        hv_errf_errno(err, "%s: stat", path);
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
        hv_errf(err, "%s: %s, not a file hvprof can read", path, kind_of(st.st_mode));
        close(fd);
        return -1;
    }
    if (blocking(fd) < 0) {
        hv_errf_errno(err, "%s", path);
        close(fd);
        return -1;
    }
    return fd;
}

FILE *hv_fopen_input(const char *path, struct hv_err *err)
{
    int fd = hv_open_input(path, err);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        hv_errf_errno(err, "%s", path);
        close(fd);
    }
    return f;
}

int hv_open_output_at(int dirfd, const char *path, bool nofollow, struct hv_err *err)
{
    /* No O_TRUNC: the lock comes first, so a second writer truncates nothing. O_NONBLOCK: a FIFO
     * without a reader fails (ENXIO) instead of blocking; refused below anyway. */
    /* Read too: a flight recorder's snapshot copies the recording back out of it. */
    int flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (nofollow)
        flags |= O_NOFOLLOW;
    int fd = openat(dirfd, path, flags, 0600); /* guest memory's contents: its owner's only */
    if (fd < 0) {
        if (errno == ELOOP && nofollow)
            return hv_errf(err, "%s: a symbolic link; refusing to write through it", path);
        if (errno == ENXIO)
            return hv_errf(err, "%s: a FIFO, not a file hvprof can write", path);
        return hv_errf_errno(err, "cannot create %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        hv_errf_errno(err, "%s: stat", path);
        goto fail;
    }
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
        hv_errf(err, "%s: %s, not a file hvprof can write", path, kind_of(st.st_mode));
        goto fail;
    }
    if (S_ISREG(st.st_mode)) {
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK)
                hv_errf(err, "%s: another process is writing it (locked); not touched", path);
            else
                hv_errf_errno(err, "%s: lock", path);
            goto fail;
        }
        if (ftruncate(fd, 0) != 0) {
            hv_errf_errno(err, "%s: truncate", path);
            goto fail;
        }
    }
    if (blocking(fd) < 0) {
        hv_errf_errno(err, "%s", path);
        goto fail;
    }
    return fd;
fail:
    close(fd);
    return -1;
}

static bool same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int hv_check_outputs(const struct hv_file_role *outputs, size_t nout,
                     const struct hv_file_role *inputs, size_t nin, struct hv_err *err)
{
    for (size_t i = 0; i < nout; i++) {
        const struct hv_file_role *o = &outputs[i];
        if (!o->path)
            continue;
        struct stat so;
        bool exists = stat(o->path, &so) == 0;
        /* Character devices (/dev/null, a terminal) may be shared by any number of outputs. */
        if (exists && S_ISCHR(so.st_mode))
            continue;
        for (size_t k = 0; exists && k < nin; k++) {
            struct stat si;
            if (inputs[k].path && stat(inputs[k].path, &si) == 0 && same(&so, &si))
                return hv_errf(err,
                               "%s %s is the same file as %s %s: refusing to overwrite an input",
                               o->role, o->path, inputs[k].role, inputs[k].path);
        }
        for (size_t k = i + 1; k < nout; k++) {
            const struct hv_file_role *p = &outputs[k];
            if (!p->path)
                continue;
            struct stat sp;
            bool clash =
                exists && stat(p->path, &sp) == 0 ? same(&so, &sp) : !strcmp(o->path, p->path);
            if (clash)
                return hv_errf(err, "%s %s and %s %s are the same file: give them different paths",
                               o->role, o->path, p->role, p->path);
        }
    }
    return 0;
}

/* One bounded read of a whole file: the size from fstat when it is a regular file (one read and
 * the EOF), else doubling up to max + 1 bytes (/proc files report size 0). */
int hv_read_file(const char *path, size_t max, uint8_t **data, size_t *size, struct hv_err *err)
{
    int fd = hv_open_input(path, err); /* never blocks: a FIFO is refused */
    if (fd < 0)
        return -1;
    struct stat st;
    size_t cap = 1 << 16;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1; /* +1: see EOF without growing */
    if (cap > max + 1)
        cap = max + 1;

    uint8_t *buf = malloc(cap);
    size_t len = 0;
    if (!buf) {
        close(fd);
        return hv_errk(err, HV_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    for (;;) {
        if (len == cap) {
            if (cap > max) {
                free(buf);
                close(fd);
                return hv_errk(err, HV_ERR_LIMIT, "%s: larger than %zu MiB", path, max >> 20);
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            uint8_t *nbuf = realloc(buf, ncap);
            if (!nbuf) {
                free(buf);
                close(fd);
                return hv_errk(err, HV_ERR_NO_MEMORY, "%s: out of memory", path);
            }
            buf = nbuf;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            errno = e;
            return hv_errf_errno(err, "%s", path);
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (len == cap) { /* room for the NUL that ends text files */
        uint8_t *nbuf = realloc(buf, len + 1);
        if (!nbuf) {
            free(buf);
            return hv_errk(err, HV_ERR_NO_MEMORY, "%s: out of memory", path);
        }
        buf = nbuf;
    }
    buf[len] = 0;
    *data = buf;
    *size = len;
    return 0;
}
