#include "diskfs/diskfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "diskfs/diskfs_priv.h"
#include "vmm/qcow/qcow_image.h"

/* The volumes of image i (a qcow image is opened and kept in d->qcow[i]). */
static int open_image(struct diskfs *d, unsigned i, const char *path,
                      const struct image_opts *opts, struct hv_err *err)
{
    /* The format as the block device decides it (vmm/image/format.h): given, or probed. */
    struct image_opts o = opts ? *opts : (struct image_opts){0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return hv_errk(err, HV_ERR_OS, "%s: %s", path, strerror(errno));
    int rc = image_format_decide(fd, path, &o, err);
    close(fd);
    if (rc < 0)
        return -1;
    struct qcow_image *qcow = NULL;
    if (o.format == IMAGE_FORMAT_QCOW2) {
        struct hv_err why;
        if (qcow_image_open(&qcow, path, &o, &why) < 0) {
            /* A damaged image is the guest's business (the block device says so when it is
             * served); here its files are only not read. */
            struct diskfs_volume v = {.disk = i};
            snprintf(v.where, sizeof(v.where), "disk %u", i);
            snprintf(v.why, sizeof(v.why), "%.95s", why.msg);
            qcow = NULL;
            if (!vec_append(&d->qcow, qcow) || !vec_append(&d->vols, v))
                return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
            return 0;
        }
    }
    if (!vec_append(&d->qcow, qcow)) {
        qcow_image_close(qcow);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    size_t first = d->vols.n;
    rc = qcow ? diskfs_probe_qcow(d, i, qcow, err) : diskfs_probe_image(d, i, path, err);
    if (rc < 0)
        return -1;
    for (size_t k = first; k < d->vols.n; k++)
        if (!d->vols.v[k].why[0])
            diskfs_ext_open(&d->vols.v[k], path, qcow);
    return 0;
}

int diskfs_open(struct diskfs *d, const char *const *images, const struct image_opts *opts,
                unsigned n, struct hv_err *err)
{
    memset(d, 0, sizeof(*d));
    for (unsigned i = 0; i < n; i++) {
        if (open_image(d, i, images[i], opts ? &opts[i] : NULL, err) < 0) {
            diskfs_close(d);
            return -1;
        }
    }
    return 0;
}

void diskfs_close(struct diskfs *d)
{
    for (size_t i = 0; i < d->vols.n; i++)
        diskfs_ext_close(&d->vols.v[i]);
    vec_free(&d->vols);
    for (size_t i = 0; i < d->qcow.n; i++)
        qcow_image_close(d->qcow.v[i]);
    vec_free(&d->qcow);
}

struct diskfs_volume *diskfs_find_uuid(struct diskfs *d, const uint8_t uuid[16])
{
    for (size_t i = 0; i < d->vols.n; i++) {
        struct diskfs_volume *v = &d->vols.v[i];
        if (v->fs && v->has_uuid && !memcmp(v->uuid, uuid, 16))
            return v;
    }
    return NULL;
}

size_t diskfs_describe(const struct diskfs *d, char *buf, size_t len)
{
    size_t at = 0;
    if (len)
        buf[0] = 0;
    for (size_t i = 0; i < d->vols.n && at < len; i++) {
        const struct diskfs_volume *v = &d->vols.v[i];
        int w = v->fs ? snprintf(buf + at, len - at, "%s: %s, read by inode\n", v->where, v->type)
                      : snprintf(buf + at, len - at, "%s: not read (%s)\n", v->where, v->why);
        if (w < 0)
            break;
        at += (size_t)w < len - at ? (size_t)w : len - at - 1;
    }
    return at;
}
