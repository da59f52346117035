#include "diskfs/diskfs.h"

#include <stdio.h>
#include <string.h>

#include "diskfs/diskfs_priv.h"

int diskfs_open(struct diskfs *d, const char *const *images, unsigned n, struct hv_err *err)
{
    memset(d, 0, sizeof(*d));
    for (unsigned i = 0; i < n; i++) {
        size_t first = d->vols.n;
        if (diskfs_probe_image(d, i, images[i], err) < 0) {
            diskfs_close(d);
            return -1;
        }
        for (size_t k = first; k < d->vols.n; k++)
            if (!d->vols.v[k].why[0])
                diskfs_ext_open(&d->vols.v[k], images[i]);
    }
    return 0;
}

void diskfs_close(struct diskfs *d)
{
    for (size_t i = 0; i < d->vols.n; i++)
        diskfs_ext_close(&d->vols.v[i]);
    vec_free(&d->vols);
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
