/* A qcow2 image's backing chain, resolved and opened by hvprof's rules (qcow_chain.h). */
#include "vmm/qcow/qcow_chain.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/image/image_lock.h"

/* Formats libqcow reads as a backing file (QEMU's names of them). */
static bool readable_format(const char *f)
{
    return !strcmp(f, "qcow2") || !strcmp(f, "qcow");
}

/* Whether `real` lies below directory `dir` (both resolved): "dir/..." */
static bool below(const char *real, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 0)
        return false;
    if (n == 1 && dir[0] == '/')
        return true;
    return !strncmp(real, dir, n) && real[n] == '/';
}

static int open_file(struct qcow_chain_file *f, const char *image, struct hv_err *err)
{
    /* image: the file naming this one (NULL for the image itself). */
    const char *pre = image ? image : "", *sep = image ? ": backing file " : "";
    f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (f->fd < 0)
        return hv_errf_errno(err, "%s%s%s", pre, sep, f->path);
    struct stat st;
    if (fstat(f->fd, &st) < 0)
        return hv_errf_errno(err, "%s%s%s", pre, sep, f->path);
    /* The image itself may be a block device (a qcow2 LV); a backing file is a file. */
    if (!S_ISREG(st.st_mode) && (image || !S_ISBLK(st.st_mode)))
        return hv_errk(err, HV_ERR_USAGE, "%s%s%s: not a regular file", pre, sep, f->path);
    f->size = (uint64_t)st.st_size;
    if (!realpath(f->path, f->real))
        return hv_errf_errno(err, "%s%s%s", pre, sep, f->path);
    int fl = fcntl(f->fd, F_GETFL);
    if (fl >= 0)
        fcntl(f->fd, F_SETFL, fl & ~O_NONBLOCK);
    return 0;
}

int qcow_chain_resolve(struct qcow_chain *c, const char *path, const struct image_opts *o,
                       struct hv_err *err)
{
    memset(c, 0, sizeof(*c));
    for (unsigned i = 0; i < QCOW_MAX_CHAIN; i++)
        c->f[i].fd = -1;
    /* Where backing files may lie: the image's own directory, and the one the user allows. */
    char home[PATH_MAX], allowed[PATH_MAX] = "";
    if (snprintf(c->f[0].path, sizeof(c->f[0].path), "%s", path) >= (int)sizeof(c->f[0].path))
        return hv_errk(err, HV_ERR_LIMIT, "%s: path too long", path);
    c->n = 1;
    if (open_file(&c->f[0], NULL, err) < 0)
        goto fail;
    memcpy(home, c->f[0].real, sizeof(home));
    char *dn = dirname(home);
    memmove(home, dn, strlen(dn) + 1);
    if (o && o->backing_dir && !realpath(o->backing_dir, allowed)) {
        hv_errf_errno(err, "backing-dir=%s", o->backing_dir);
        goto fail;
    }
    snprintf(c->f[0].format, sizeof(c->f[0].format), "qcow2");
    c->f[0].format_from = o && o->probed ? "probed" : "given";
    for (;;) {
        struct qcow_chain_file *f = &c->f[c->n - 1];
        if (qcow2_header_read(f->fd, f->path, &f->h, err) < 0)
            goto fail;
        if (f->h.external_data) {
            hv_errk(err, HV_ERR_UNSUPPORTED,
                    "%s: its data lives in an external data file (qcow2 incompatible feature "
                    "bit 2), which hvprof does not open",
                    f->path);
            goto fail;
        }
        if (!f->h.has_backing)
            return 0;
        if (c->n == QCOW_MAX_CHAIN) {
            hv_errk(err, HV_ERR_LIMIT, "%s: a backing chain longer than %u images", path,
                    QCOW_MAX_CHAIN);
            goto fail;
        }
        struct qcow_chain_file *b = &c->f[c->n];
        /* Relative names are relative to the naming image's directory, as QEMU resolves them. */
        char dir[PATH_MAX] = "", name[sizeof(f->h.backing)];
        memcpy(name, f->h.backing, sizeof(name));
        if (name[0] != '/') {
            memcpy(dir, f->path, sizeof(dir));
            char *up = dirname(dir);
            memmove(dir, up, strlen(up) + 1);
        }
        int w = snprintf(b->path, sizeof(b->path), "%s%s%s", dir, dir[0] ? "/" : "", name);
        if (w >= (int)sizeof(b->path)) {
            hv_errk(err, HV_ERR_LIMIT, "%s: its backing file's path is too long", f->path);
            goto fail;
        }
        /* Its format: stated by the header, or by the user; never probed. */
        if (f->h.has_backing_format) {
            memcpy(b->format, f->h.backing_format, sizeof(b->format));
            b->format_from = "backing_fmt";
        } else if (o && o->backing_format) {
            snprintf(b->format, sizeof(b->format), "%s", o->backing_format);
            b->format_from = "backing-format=";
        } else {
            hv_errk(err, HV_ERR_UNSUPPORTED,
                    "%s names backing file %s without its format (no backing_fmt in its "
                    "header); hvprof never guesses a backing file's format. If you know it is "
                    "qcow2: --disk %s,backing-format=qcow2, or record it in the image with "
                    "qemu-img rebase -u -f qcow2 -b %s -F qcow2 %s",
                    f->path, f->h.backing, path, f->h.backing, f->path);
            goto fail;
        }
        if (!readable_format(b->format)) {
            hv_errk(err, HV_ERR_UNSUPPORTED,
                    "%s: backing file %s is %s (%s); hvprof reads qcow2 backing files only: "
                    "qemu-img convert -f qcow2 -O raw %s IMAGE.raw makes one raw image of the "
                    "chain (every format in it stated, nothing probed)",
                    f->path, b->path, b->format, b->format_from, path);
            goto fail;
        }
        c->n++;
        if (open_file(b, f->path, err) < 0)
            goto fail;
        if (!below(b->real, home) && !(allowed[0] && below(b->real, allowed))) {
            hv_errk(err, HV_ERR_USAGE,
                    "%s names backing file %s (%s), outside the image's directory %s: an image "
                    "may only name backing files beside it. If you trust this chain: --disk "
                    "%s,backing-dir=DIR",
                    f->path, f->h.backing, b->real, home, path);
            goto fail;
        }
        struct stat sb;
        if (fstat(b->fd, &sb) < 0) {
            hv_errf_errno(err, "%s", b->path);
            goto fail;
        }
        for (unsigned k = 0; k + 1 < c->n; k++) {
            struct stat sk;
            if (fstat(c->f[k].fd, &sk) == 0 && sk.st_dev == sb.st_dev && sk.st_ino == sb.st_ino) {
                hv_errk(err, HV_ERR_CORRUPT, "%s: its backing chain comes back to %s (a loop)",
                        path, b->path);
                goto fail;
            }
        }
        uint8_t magic[4] = {0};
        if (pread(b->fd, magic, 4, 0) != 4 || memcmp(magic, "QFI\xfb", 4)) {
            hv_errk(err, HV_ERR_CORRUPT, "%s: backing file %s is not a %s image, as %s says",
                    f->path, b->path, b->format, b->format_from);
            goto fail;
        }
    }
fail:
    qcow_chain_close(c);
    return -1;
}

int qcow_chain_lock(struct qcow_chain *c, struct hv_err *err)
{
    for (unsigned i = 0; i < c->n; i++) {
        struct qcow_chain_file *f = &c->f[i];
        /* flock() for hvprof and tools that use it, QEMU's byte locks for QEMU. */
        if (flock(f->fd, LOCK_SH | LOCK_NB) < 0)
            return hv_errf(err, "%s: %s", f->path,
                           errno == EWOULDBLOCK ? "being written by another process (locked)"
                                                : strerror(errno));
        if (image_lock(f->fd, f->path, IMAGE_LOCK_READ, err) < 0)
            return -1;
    }
    return 0;
}

void qcow_chain_describe(const struct qcow_chain *c, char *out, size_t len)
{
    size_t at = 0;
    if (len)
        out[0] = 0;
    for (unsigned i = 0; i < c->n && at < len; i++) {
        int w = snprintf(out + at, len - at, "%s%s (%s%s%s)", i ? " <- " : "", c->f[i].path,
                         c->f[i].format, i ? ", " : "", i ? c->f[i].format_from : "");
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

void qcow_chain_close(struct qcow_chain *c)
{
    for (unsigned i = 0; i < QCOW_MAX_CHAIN; i++) {
        if (c->f[i].fd >= 0)
            close(c->f[i].fd);
        c->f[i].fd = -1;
    }
    c->n = 0;
}
