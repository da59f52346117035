#include "vmm/qcow/qcow_image.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <libqcow.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/qcow/cluster_cache.h"
#include "vmm/qcow/qemu_check.h"
#include "vmm/qcow/qemu_map.h"

/* Decompressed clusters kept for an image with compressed clusters (cluster_cache.h). */
#define QCOW_CACHE_BYTES (16u << 20)

struct qcow_image {
    struct qcow_chain chain;               /* the files, open and locked (qcow_chain.h) */
    libqcow_file_t *files[QCOW_MAX_CHAIN]; /* libqcow's of each, in the chain's order */
    unsigned n;
    uint64_t size;
    char what[512];
    pthread_mutex_t lock;        /* libqcow's file and the cache: one reader at a time */
    struct cluster_cache *cache; /* NULL: no image of the chain has compressed clusters */
    uint32_t chunk;              /* the cache's unit: the chain's largest cluster */
    /* QEMU's map of the chain (qemu_map.h): its extents are read from the chain's files
     * (the chain's descriptors, in its order) with pread() or as zeros; the rest through libqcow. Empty when
     * QEMU could not map it (all through libqcow). Set at open, read-only after. */
    struct qcow_map map;
    _Atomic uint64_t mapped_bytes, libqcow_bytes;
};

bool qcow_image_magic(const uint8_t head[4])
{
    return !memcmp(head, "QFI\xfb", 4);
}

/* libqcow's message for err, then freed. */
static int qcow_fail(struct hv_err *err, libqcow_error_t **e, const char *path, const char *what)
{
    char msg[256] = "";
    if (e && *e) {
        libqcow_error_sprint(*e, msg, sizeof(msg));
        libqcow_error_free(e);
        for (char *c = msg; *c; c++)
            if (*c == '\n')
                *c = ' '; /* libqcow's backtrace lines, as one */
    }
    return hv_errk(err, HV_ERR_CORRUPT, "%s: %s%s%.200s", path, what, msg[0] ? ": " : "", msg);
}

/* One file of the chain: QEMU's check of it, then libqcow's reader of the very file the chain
 * opened and checked (through its descriptor, so that no rename in between can swap it). */
static int open_one(libqcow_file_t **out, const char *path, int fd, uint64_t *compressed,
                    struct hv_err *err)
{
    if (qemu_check(path, compressed, err) < 0)
        return -1;
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    const char *name = access(self, R_OK) == 0 ? self : path; /* no /proc: by its name */
    libqcow_error_t *e = NULL;
    libqcow_file_t *f = NULL;
    uint32_t method = 0;
    if (libqcow_file_initialize(&f, &e) != 1)
        return qcow_fail(err, &e, path, "libqcow");
    if (libqcow_file_open(f, name, libqcow_get_access_flags_read(), &e) != 1) {
        libqcow_file_free(&f, NULL);
        return qcow_fail(err, &e, path, "not a qcow image libqcow can read");
    }
    if (libqcow_file_get_encryption_method(f, &method, &e) != 1 ||
        method != LIBQCOW_ENCRYPTION_METHOD_NONE) {
        libqcow_error_free(&e);
        libqcow_file_close(f, NULL);
        libqcow_file_free(&f, NULL);
        return hv_errk(err, HV_ERR_UNSUPPORTED, "%s: an encrypted qcow image", path);
    }
    *out = f;
    return 0;
}

int qcow_image_open(struct qcow_image **out, const char *path, const struct image_opts *o,
                    struct hv_err *err)
{
    struct qcow_image *q = calloc(1, sizeof(*q));
    if (!q)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&q->lock, NULL);
    for (unsigned i = 0; i < QCOW_MAX_CHAIN; i++)
        q->chain.f[i].fd = -1;
    uint64_t compressed = 0;
    uint64_t file_sizes[QCOW_MAX_CHAIN];
    /* Every file named, opened and locked before libqcow or QEMU reads any of them. */
    if (qcow_chain_resolve(&q->chain, path, o, err) < 0 || qcow_chain_lock(&q->chain, err) < 0)
        goto fail;
    int at = snprintf(q->what, sizeof(q->what), "qcow2");
    for (unsigned i = 0; i < q->chain.n; i++) {
        const struct qcow_chain_file *f = &q->chain.f[i];
        uint64_t c = 0;
        if (open_one(&q->files[q->n], f->path, f->fd, &c, err) < 0)
            goto fail;
        q->n++;
        file_sizes[i] = f->size;
        compressed += c;
        uint32_t cs = 1u << f->h.cluster_bits;
        if (cs > q->chunk)
            q->chunk = cs;
        if (i && at < (int)sizeof(q->what)) {
            const char *base = strrchr(f->path, '/') ? strrchr(f->path, '/') + 1 : f->path;
            at += snprintf(q->what + at, sizeof(q->what) - (size_t)at, "%s%.64s",
                           i == 1 ? ", backing chain: " : " <- ", base);
        }
    }
    /* Each image reads what it does not hold from the next (libqcow's parent file). */
    libqcow_error_t *e = NULL;
    for (unsigned i = 0; i + 1 < q->n; i++)
        if (libqcow_file_set_parent_file(q->files[i], q->files[i + 1], &e) != 1) {
            qcow_fail(err, &e, path, "its backing file");
            goto fail;
        }
    size64_t size = 0;
    if (libqcow_file_get_media_size(q->files[0], &size, &e) != 1) {
        qcow_fail(err, &e, path, "its size");
        goto fail;
    }
    q->size = size;
    /* Where the data lies, by QEMU (qemu_map.h); without it, every read goes through libqcow,
     * as it did before, and the description says why. */
    struct hv_err map_err = {0};
    if (qcow_map_of(&q->map, path, q->size, file_sizes, q->n, &map_err) < 0 &&
        at < (int)sizeof(q->what))
        snprintf(q->what + at, sizeof(q->what) - (size_t)at, "; no map (%.96s)", map_err.msg);
    /* Compressed clusters: keep them decompressed (cluster_cache.h), 16 MiB of them. */
    if (compressed && q->chunk) {
        unsigned slots = QCOW_CACHE_BYTES / q->chunk;
        q->cache = cluster_cache_new(q->chunk, slots < 2 ? 2 : slots);
        if (!q->cache) {
            hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for %s's cluster cache", path);
            goto fail;
        }
    }
    *out = q;
    return 0;
fail:
    qcow_image_close(q);
    return -1;
}

const struct qcow_chain *qcow_image_chain(const struct qcow_image *q)
{
    return &q->chain;
}

uint64_t qcow_image_size(const struct qcow_image *q)
{
    return q->size;
}

const char *qcow_image_describe(const struct qcow_image *q)
{
    return q->what;
}

/* [off, off + len) through libqcow. */
static bool read_at(struct qcow_image *q, void *buf, size_t len, uint64_t off, struct hv_err *err)
{
    libqcow_error_t *e = NULL;
    ssize_t got = libqcow_file_read_buffer_at_offset(q->files[0], buf, len, (off64_t)off, &e);
    if (got < 0 || (size_t)got != len) {
        qcow_fail(err, &e, "qcow image", "a read");
        return false;
    }
    return true;
}

/* Through the cache: each cluster-sized chunk the range touches is copied from its kept
 * decompressed copy, or read whole (one decompression) and kept; a read of whole chunks goes
 * straight to the buffer (kept copies would not be read again soon). */
static bool read_cached(struct qcow_image *q, uint8_t *buf, size_t len, uint64_t off,
                        struct hv_err *err)
{
    while (len) {
        uint64_t index = off / q->chunk;
        size_t within = (size_t)(off % q->chunk);
        size_t piece = len < q->chunk - within ? len : q->chunk - within;
        const uint8_t *data = cluster_cache_find(q->cache, index);
        if (!data && !within && piece == q->chunk) {
            if (!read_at(q, buf, piece, off, err))
                return false;
        } else {
            if (!data) {
                uint64_t start = index * q->chunk;
                size_t clen = q->size - start < q->chunk ? (size_t)(q->size - start) : q->chunk;
                uint8_t *slot = cluster_cache_claim(q->cache, index);
                if (!read_at(q, slot, clen, start, err)) {
                    cluster_cache_drop(q->cache, index);
                    return false;
                }
                data = slot;
            }
            memcpy(buf, data + within, piece);
        }
        buf += piece;
        off += piece;
        len -= piece;
    }
    return true;
}

/* [off, off + len) of the chain's file at `depth`, as it is stored (QEMU mapped it). */
static bool read_mapped(struct qcow_image *q, const struct qcow_extent *x, uint8_t *buf, size_t len,
                        uint64_t off, struct hv_err *err)
{
    uint64_t at = x->offset + (off - x->start);
    while (len) {
        ssize_t got = pread(q->chain.f[x->depth].fd, buf, len, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got < 0)
                hv_errf_errno(err, "qcow image: a read of its file %u", x->depth);
            else
                hv_errk(err, HV_ERR_CORRUPT, "qcow image: its file %u is shorter than it was",
                        x->depth);
            return false;
        }
        buf += got;
        at += (uint64_t)got;
        len -= (size_t)got;
    }
    return true;
}

/* What QEMU did not map, through libqcow (one reader at a time). */
static bool read_libqcow(struct qcow_image *q, uint8_t *buf, size_t len, uint64_t off,
                         struct hv_err *err)
{
    pthread_mutex_lock(&q->lock);
    bool ok = q->cache ? read_cached(q, buf, len, off, err) : read_at(q, buf, len, off, err);
    pthread_mutex_unlock(&q->lock);
    q->libqcow_bytes += len;
    return ok;
}

static bool read_range(struct qcow_image *q, uint8_t *buf, size_t len, uint64_t off,
                       struct hv_err *err)
{
    while (len) {
        const struct qcow_extent *x = qcow_map_find(&q->map, off);
        size_t piece = len;
        bool ok;
        if (x && x->start <= off) {
            if (x->start + x->length - off < piece)
                piece = (size_t)(x->start + x->length - off);
            if (x->kind == QCOW_EXTENT_ZERO) {
                memset(buf, 0, piece);
                ok = true;
            } else {
                ok = read_mapped(q, x, buf, piece, off, err);
            }
            q->mapped_bytes += piece;
        } else {
            if (x && x->start - off < piece)
                piece = (size_t)(x->start - off);
            ok = read_libqcow(q, buf, piece, off, err);
        }
        if (!ok)
            return false;
        buf += piece;
        off += piece;
        len -= piece;
    }
    return true;
}

bool qcow_image_readv(struct qcow_image *q, const struct iovec *iov, int n, uint64_t off,
                      struct hv_err *err)
{
    /* The common case, a request within one extent stored as is: one preadv(), as a raw
     * image's request is read (a short one is read again piece by piece below). */
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    const struct qcow_extent *x = qcow_map_find(&q->map, off);
    if (x && x->kind == QCOW_EXTENT_DATA && x->start <= off && total &&
        total <= x->start + x->length - off) {
        ssize_t got = preadv(q->chain.f[x->depth].fd, iov, n, (off_t)(x->offset + (off - x->start)));
        if (got >= 0 && (uint64_t)got == total) {
            q->mapped_bytes += total;
            return true;
        }
    }
    for (int i = 0; i < n; i++) {
        if (off > q->size || iov[i].iov_len > q->size - off) {
            hv_errk(err, HV_ERR_LIMIT, "a read past the image's end");
            return false;
        }
        if (!read_range(q, iov[i].iov_base, iov[i].iov_len, off, err))
            return false;
        off += iov[i].iov_len;
    }
    return true;
}

void qcow_image_map_stats(const struct qcow_image *q, uint64_t *mapped, uint64_t *libqcow)
{
    *mapped = q->mapped_bytes;
    *libqcow = q->libqcow_bytes;
}

void qcow_image_cache_stats(const struct qcow_image *q, uint64_t *hits, uint64_t *misses)
{
    cluster_cache_stats(q->cache, hits, misses);
}

void qcow_image_close(struct qcow_image *q)
{
    if (!q)
        return;
    cluster_cache_free(q->cache);
    qcow_map_free(&q->map);
    qcow_chain_close(&q->chain);
    pthread_mutex_destroy(&q->lock);
    for (unsigned i = 0; i < q->n; i++) {
        libqcow_file_close(q->files[i], NULL);
        libqcow_file_free(&q->files[i], NULL);
    }
    free(q);
}
