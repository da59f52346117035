#include "vmm/virtio/blk.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vmm/image/image_lock.h"
#include "vmm/qcow/qcow_image.h"

/* An unlinked file for the overlay, nowhere a path could reach it. */
static int overlay_file(uint64_t bytes, struct hv_err *err)
{
    /* $TMPDIR, else /var/tmp (a disk's size may not fit a RAM-backed /tmp), else /tmp where
     * there is no /var/tmp (a minimal root, an initramfs). */
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) {
        struct stat st;
        dir = stat("/var/tmp", &st) == 0 || errno != ENOENT ? "/var/tmp" : "/tmp";
    }
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | O_EXCL, 0600);
    /* Any failure: file systems without O_TMPFILE answer EOPNOTSUPP, EISDIR or EINVAL, and 9p
     * (a shared host folder) ENOENT; a named file unlinked at once is the same overlay, and its
     * own error is the one worth reporting. */
    if (fd < 0) {
        char tmpl[PATH_MAX];
        if (snprintf(tmpl, sizeof(tmpl), "%s/hvprof-overlay-XXXXXX", dir) >= (int)sizeof(tmpl))
            return hv_errk(err, HV_ERR_LIMIT, "overlay: $TMPDIR is too long");
        fd = mkostemp(tmpl, O_CLOEXEC);
        if (fd < 0)
            return hv_errf_errno(err, "overlay in %s", dir);
        /* Sized before it is unlinked: 9p truncates by name, which an unlinked file has lost. */
        int rc = ftruncate(fd, (off_t)bytes);
        int saved = errno;
        unlink(tmpl);
        if (rc < 0) {
            close(fd);
            errno = saved;
            return hv_errf_errno(err, "overlay in %s", dir);
        }
        return fd;
    }
    if (ftruncate(fd, (off_t)bytes) < 0) {
        hv_errf_errno(err, "overlay in %s", dir);
        close(fd);
        return -1;
    }
    return fd;
}

int virtio_blk_open(struct virtio_blk *b, const char *path, enum virtio_blk_mode mode,
                    const struct image_opts *opts, struct hv_err *err)
{
    struct image_opts o = opts ? *opts : (struct image_opts){0};
    memset(b, 0, sizeof(*b));
    b->fd = -1;
    b->overlay_fd = -1;
    bool readonly;
    /* Read-only until the format is known: a qcow image is never written (a read-only cloud
     * image opens as well as a writable one). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return hv_errf_errno(err, "%s", path);
    struct stat st;
    uint64_t bytes = 0;
    if (fstat(fd, &st) < 0) {
        hv_errf_errno(err, "%s", path);
        goto fail;
    }
    if (S_ISREG(st.st_mode)) {
        bytes = (uint64_t)st.st_size;
    } else if (!S_ISBLK(st.st_mode) || ioctl(fd, BLKGETSIZE64, &bytes) < 0) {
        hv_errf(err, "%s: not a regular file or block device", path);
        goto fail;
    }
    /* The format as given, or probed once (vmm/image/format.h); never guessed again here. */
    if (image_format_decide(fd, path, &o, err) < 0)
        goto fail;
    if (o.format == IMAGE_FORMAT_QCOW2) {
        /* libqcow reads; the guest's writes are kept in the overlay (QEMU's -snapshot). */
        if (qcow_image_open(&b->qcow, path, &o, err) < 0)
            goto fail;
        bytes = qcow_image_size(b->qcow);
        snprintf(b->format, sizeof(b->format), "%s", qcow_image_describe(b->qcow));
        if (mode == VIRTIO_BLK_RW)
            mode = VIRTIO_BLK_OVERLAY;
    } else {
        snprintf(b->format, sizeof(b->format), "raw%s", o.probed ? " (probed)" : "");
        b->probed_raw = o.probed;
        if (mode == VIRTIO_BLK_RW) {
            int rw = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
            if (rw < 0) {
                hv_errf_errno(err, "%s", path);
                goto fail;
            }
            /* The same file it was decided for (a rename in between would swap it). */
            struct stat st2;
            if (fstat(rw, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
                close(rw);
                hv_errf(err, "%s: replaced while it was being opened", path);
                goto fail;
            }
            close(fd);
            fd = rw;
        }
    }
    if (bytes < VIRTIO_BLK_SECTOR) {
        hv_errf(err, "%s: %llu bytes, less than one 512-byte sector", path,
                (unsigned long long)bytes);
        goto fail;
    }
    /* One writer per image, as QEMU locks its images: a second VM on the same disk would
     * corrupt the file system on it. (A qcow2 chain is locked by qcow_image_open, as a
     * reader nobody may write under.) */
    readonly = mode != VIRTIO_BLK_RW;
    if (!b->qcow && flock(fd, (readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
        hv_errf(err, "%s: %s", path,
                errno == EWOULDBLOCK ? "in use by another process (locked)" : strerror(errno));
        goto fail;
    }
    /* ... and as QEMU locks them, which flock() does not see (image_lock.h). */
    enum image_lock_mode lm = mode == VIRTIO_BLK_RW   ? IMAGE_LOCK_WRITE
                              : mode == VIRTIO_BLK_RO ? IMAGE_LOCK_READ
                                                      : IMAGE_LOCK_SHARE_ALL;
    if (!b->qcow && image_lock(fd, path, lm, err) < 0)
        goto fail;
    b->sectors = bytes / VIRTIO_BLK_SECTOR;
    b->bytes = b->sectors * VIRTIO_BLK_SECTOR;
    if (mode == VIRTIO_BLK_OVERLAY) {
        uint64_t blocks = (b->bytes + VIRTIO_BLK_OVERLAY_BLOCK - 1) / VIRTIO_BLK_OVERLAY_BLOCK;
        b->overlay_dirty = calloc((size_t)((blocks + 7) / 8), 1);
        if (!b->overlay_dirty) {
            hv_errf(err, "%s: no memory for the overlay's map (%llu blocks)", path,
                    (unsigned long long)blocks);
            goto fail;
        }
        b->overlay_fd = overlay_file(b->bytes, err);
        if (b->overlay_fd < 0) {
            hv_err_prefix(err, "%s", path);
            free(b->overlay_dirty);
            b->overlay_dirty = NULL;
            goto fail;
        }
    }
    b->fd = fd;
    b->mode = mode;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    /* 5.2.6: up to 20 bytes, NUL-terminated only if shorter. */
    size_t idlen = strlen(base) < sizeof(b->id) ? strlen(base) : sizeof(b->id);
    memcpy(b->id, base, idlen);
    return 0;
fail:
    qcow_image_close(b->qcow);
    b->qcow = NULL;
    close(fd);
    return -1;
}

void virtio_blk_close(struct virtio_blk *b)
{
    qcow_image_close(b->qcow);
    b->qcow = NULL;
    if (b->fd >= 0)
        close(b->fd);
    if (b->overlay_fd >= 0)
        close(b->overlay_fd);
    free(b->overlay_dirty);
    b->overlay_dirty = NULL;
    b->fd = b->overlay_fd = -1;
}

uint64_t virtio_blk_features(const struct virtio_blk *b)
{
    uint64_t f = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_BLK_F_SEG_MAX |
                 1ull << VIRTIO_BLK_F_BLK_SIZE | 1ull << VIRTIO_BLK_F_FLUSH;
    if (b->mode == VIRTIO_BLK_RO)
        f |= 1ull << VIRTIO_BLK_F_RO;
    return f;
}

void virtio_blk_config_read(const struct virtio_blk *b, uint32_t off, uint8_t *out, unsigned len)
{
    /* 5.2.4 struct virtio_blk_config: capacity (le64) at 0, size_max (le32) at 8, seg_max
     * (le32) at 12, geometry at 16, blk_size (le32) at 20; the rest is left 0. */
    uint8_t cfg[24] = {0};
    uint32_t seg_max = VIRTQ_MAX_SEGS - 2, blk = VIRTIO_BLK_SECTOR; /* header, status */
    memcpy(cfg, &b->sectors, 8);
    memcpy(cfg + 12, &seg_max, 4);
    memcpy(cfg + 20, &blk, 4);
    for (unsigned i = 0; i < len; i++)
        out[i] = off + i < sizeof(cfg) ? cfg[off + i] : 0;
}

/* iovecs for bytes [from, from + n) of the request's readable (write = false) or writable
 * buffers. Returns the count, -1 if the range is not there. */
static int span(const struct virtq_req *r, bool write, uint64_t from, uint64_t n, struct iovec *iov)
{
    int k = 0;
    uint64_t pos = 0;
    unsigned first = write ? r->nread : 0, last = write ? r->nseg : r->nread;
    for (unsigned i = first; i < last && n; i++) {
        uint64_t len = r->seg[i].len;
        if (from < pos + len) {
            uint64_t skip = from > pos ? from - pos : 0, take = len - skip < n ? len - skip : n;
            iov[k++] = (struct iovec){r->seg[i].host + skip, take};
            from += take;
            n -= take;
        }
        pos += len;
    }
    return n ? -1 : k;
}

static bool stopping(const struct virtio_blk *b)
{
    return b->stop && atomic_load_explicit(b->stop, memory_order_relaxed);
}

/* preadv/pwritev of the whole range (retried on EINTR and short transfers); false on an I/O
 * error or end of file. */
static bool transfer(int fd, bool write, struct iovec *iov, int n, uint64_t off)
{
    while (n > 0) {
        ssize_t got = write ? pwritev(fd, iov, n, (off_t)off) : preadv(fd, iov, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        off += (uint64_t)got;
        while (n > 0 && (size_t)got >= iov->iov_len) {
            got -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + got;
            iov->iov_len -= (size_t)got;
        }
    }
    return true;
}

/* The image's bytes, or the overlay's, or a write: a qcow image is read through libqcow, anything
 * else with preadv/pwritev. */
static bool image_io(struct virtio_blk *b, int fd, bool write, struct iovec *iov, int n,
                     uint64_t off)
{
    if (b->qcow && fd == b->fd && !write) {
        struct hv_err err;
        return qcow_image_readv(b->qcow, iov, n, off, &err);
    }
    return transfer(fd, write, iov, n, off);
}

/* Bytes [rel, rel + n) of a request's data (OUT: the readable buffers after the 16-byte header;
 * IN: the writable buffers) to or from `fd` at `off`, a slice at a time; false on an I/O error
 * or when the VM stops (b->abandoning then says which). */
static bool data_io(struct virtio_blk *b, const struct virtq_req *r, bool out, int fd, uint64_t rel,
                    uint64_t n, uint64_t off)
{
    struct iovec iov[VIRTQ_MAX_SEGS];
    for (uint64_t done = 0; done < n;) {
        if (stopping(b)) {
            b->abandoning = true;
            return false;
        }
        uint64_t take = n - done < VIRTIO_BLK_SLICE ? n - done : VIRTIO_BLK_SLICE;
        int k =
            out ? span(r, false, 16 + rel + done, take, iov) : span(r, true, rel + done, take, iov);
        if (k < 0 || !image_io(b, fd, out, iov, k, off + done))
            return false;
        done += take;
    }
    return true;
}

static bool overlay_has(const struct virtio_blk *b, uint64_t blk)
{
    return b->overlay_dirty[blk / 8] >> (blk % 8) & 1;
}

/* A read: each run of blocks from where it now lives, the overlay or the image. */
static bool overlay_read(struct virtio_blk *b, const struct virtq_req *r, uint64_t off,
                         uint64_t len)
{
    const uint64_t B = VIRTIO_BLK_OVERLAY_BLOCK;
    for (uint64_t pos = off, end = off + len; pos < end;) {
        bool in = overlay_has(b, pos / B);
        uint64_t stop = (pos / B + 1) * B;
        while (stop < end && overlay_has(b, stop / B) == in)
            stop += B;
        if (stop > end)
            stop = end;
        if (!data_io(b, r, false, in ? b->overlay_fd : b->fd, pos - off, stop - pos, pos))
            return false;
        pos = stop;
    }
    return true;
}

/* Block `blk` of the image into the overlay (before a write covers part of it). */
static bool overlay_copy(struct virtio_blk *b, uint64_t blk)
{
    uint8_t buf[VIRTIO_BLK_OVERLAY_BLOCK];
    uint64_t at = blk * VIRTIO_BLK_OVERLAY_BLOCK;
    uint64_t n = b->bytes - at < sizeof(buf) ? b->bytes - at : sizeof(buf);
    struct iovec in = {buf, (size_t)n}, out = {buf, (size_t)n};
    return image_io(b, b->fd, false, &in, 1, at) && transfer(b->overlay_fd, true, &out, 1, at);
}

/* A write, into the overlay only: the edge blocks it covers in part are copied first, so every
 * block the overlay holds is whole. */
static bool overlay_write(struct virtio_blk *b, const struct virtq_req *r, uint64_t off,
                          uint64_t len)
{
    const uint64_t B = VIRTIO_BLK_OVERLAY_BLOCK;
    if (len == 0)
        return true;
    uint64_t first = off / B, last = (off + len - 1) / B;
    for (uint64_t blk = first;; blk = last) {
        uint64_t lo = blk * B, hi = lo + B < b->bytes ? lo + B : b->bytes;
        if (!overlay_has(b, blk) && (off > lo || off + len < hi) && !overlay_copy(b, blk))
            return false;
        if (blk == last)
            break;
    }
    if (!data_io(b, r, true, b->overlay_fd, 0, len, off))
        return false;
    for (uint64_t blk = first; blk <= last; blk++)
        if (!overlay_has(b, blk)) {
            b->overlay_dirty[blk / 8] |= (uint8_t)(1u << (blk % 8));
            b->overlay_blocks++;
        }
    return true;
}

/* The sector-0 rule (vmm/image/format.h): on an image probed raw, the first sector a write
 * would leave there must still probe as raw. The data's first 512 bytes are the whole new
 * sector (requests are whole sectors). The format it would probe as, NULL if none. */
static const char *sector0_flip(const struct virtio_blk *b, const struct virtq_req *r,
                                uint64_t sector, uint64_t len)
{
    if (!b->probed_raw || sector != 0 || len < VIRTIO_BLK_SECTOR)
        return NULL;
    struct iovec iov[VIRTQ_MAX_SEGS];
    uint8_t head[VIRTIO_BLK_SECTOR];
    int n = span(r, false, 16, sizeof(head), iov);
    if (n < 0)
        return NULL; /* not there: the write fails anyway */
    for (int i = 0, at = 0; i < n; at += (int)iov[i].iov_len, i++)
        memcpy(head + at, iov[i].iov_base, iov[i].iov_len);
    return image_format_probe(head, sizeof(head));
}

/* One request; returns the bytes written into its writable buffers (data, status), or -1 if the
 * VM stopped while its data moved (nothing is answered then). */
static int64_t serve(struct virtio_blk *b, const struct virtq_req *r)
{
    b->abandoning = false;
    static_assert(VIRTQ_MAX_SEGS <= IOV_MAX, "one iovec per buffer");
    struct iovec iov[VIRTQ_MAX_SEGS];
    /* 5.2.6: type, reserved, sector (16 bytes, device-readable) ... status (the last
     * device-writable byte). Without a writable byte there is nowhere to answer. */
    if (r->write_bytes == 0) {
        b->errors++;
        return 0;
    }
    const struct virtq_seg *last = &r->seg[r->nseg - 1];
    uint8_t *status = last->host + last->len - 1;
    uint64_t data_in = r->write_bytes - 1; /* writable bytes before the status */
    uint8_t hdr[16];
    uint32_t type;
    uint64_t sector;
    int n = span(r, false, 0, sizeof(hdr), iov);
    if (n < 0) {
        b->errors++;
        *status = VIRTIO_BLK_S_IOERR;
        return 1;
    }
    for (int i = 0, at = 0; i < n; at += (int)iov[i].iov_len, i++)
        memcpy(hdr + at, iov[i].iov_base, iov[i].iov_len);
    memcpy(&type, hdr, 4);
    memcpy(&sector, hdr + 8, 8);
    uint64_t data_out = r->read_bytes - sizeof(hdr);
    uint8_t st = VIRTIO_BLK_S_OK;
    uint32_t written = 0;
    switch (type) {
    case VIRTIO_BLK_T_IN:
    case VIRTIO_BLK_T_OUT: {
        bool out = type == VIRTIO_BLK_T_OUT;
        uint64_t len = out ? data_out : data_in;
        /* Whole sectors inside the disk (5.2.6.1: a multiple of 512 bytes). */
        if (len % VIRTIO_BLK_SECTOR || sector > b->sectors ||
            len / VIRTIO_BLK_SECTOR > b->sectors - sector || (out && b->mode == VIRTIO_BLK_RO)) {
            st = VIRTIO_BLK_S_IOERR;
            break;
        }
        const char *flip = out ? sector0_flip(b, r, sector, len) : NULL;
        if (flip) {
            /* QEMU answers EPERM; the guest sees an I/O error, the image keeps its sector. */
            b->sector0_refused++;
            b->sector0_format = flip;
            st = VIRTIO_BLK_S_IOERR;
            break;
        }
        uint64_t off = sector * VIRTIO_BLK_SECTOR;
        bool ok = b->overlay_fd < 0 ? data_io(b, r, out, b->fd, 0, len, off)
                  : out             ? overlay_write(b, r, off, len)
                                    : overlay_read(b, r, off, len);
        if (!ok && b->abandoning) {
            b->abandoned++;
            return -1;
        }
        if (!ok) {
            st = VIRTIO_BLK_S_IOERR;
            break;
        }
        if (out) {
            b->writes++;
            b->bytes_written += len;
        } else {
            b->reads++;
            b->bytes_read += len;
            written = (uint32_t)len;
        }
        break;
    }
    case VIRTIO_BLK_T_FLUSH:
        b->flushes++;
        /* An overlay is private and dropped at exit: nothing of it needs to reach a disk. */
        if (b->mode == VIRTIO_BLK_RW && fdatasync(b->fd) < 0)
            st = VIRTIO_BLK_S_IOERR;
        break;
    case VIRTIO_BLK_T_GET_ID: {
        uint64_t len = data_in < VIRTIO_BLK_ID_BYTES ? data_in : VIRTIO_BLK_ID_BYTES;
        n = span(r, true, 0, len, iov);
        for (int i = 0, at = 0; i < n; at += (int)iov[i].iov_len, i++)
            memcpy(iov[i].iov_base, b->id + at, iov[i].iov_len);
        written = (uint32_t)len;
        break;
    }
    default:
        st = VIRTIO_BLK_S_UNSUPP;
    }
    b->errors += st != VIRTIO_BLK_S_OK;
    *status = st;
    return written + 1;
}

int virtio_blk_process(struct virtio_blk *b, struct virtq *q, const struct gmem *m)
{
    int done = 0, rc = 0;
    while (!stopping(b) && (rc = virtq_pop(q, m, &b->req)) == 1) {
        int64_t written = serve(b, &b->req);
        if (written < 0)
            return done;
        if (!virtq_push(q, m, b->req.head, (uint32_t)written))
            return -1;
        done++;
    }
    return stopping(b) || rc >= 0 ? done : -1;
}

static uint64_t ops_features(void *dev)
{
    return virtio_blk_features(dev);
}

static void ops_config_read(void *dev, uint32_t off, uint8_t *out, unsigned len)
{
    virtio_blk_config_read(dev, off, out, len);
}

static int ops_pop(void *dev, unsigned q, struct virtq *vq, const struct gmem *m)
{
    (void)q; /* one queue: requestq (5.2.2) */
    struct virtio_blk *b = dev;
    return stopping(b) ? 0 : virtq_pop(vq, m, &b->req); /* nothing new once the VM stops */
}

static int64_t ops_serve(void *dev, uint16_t *head)
{
    struct virtio_blk *b = dev;
    *head = b->req.head;
    return serve(b, &b->req);
}

const struct virtio_dev_ops virtio_blk_ops = {
    .device_id = 2, /* 5: block device */
    .nqueues = 1,
    .features = ops_features,
    .config_read = ops_config_read,
    .pop = ops_pop,
    .serve = ops_serve,
};
