/* The generic FXT file writer: one file, one stream per provider (writer.h). */
#include "fxt/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/files.h"
#include "fxt/ring.h"

/* The largest prefix of the buffer's first `limit` bytes that is whole records, and how many
 * records it holds (the buffer holds only whole records written by this writer; FXT spec: the
 * size in words is header bits [4..15], or [4..35] for large records of type 15). */
static size_t record_boundary(const uint8_t *buf, size_t len, size_t limit, uint64_t *nrec)
{
    size_t off = 0;
    *nrec = 0;
    while (off + 8 <= len) {
        uint64_t h;
        memcpy(&h, buf + off, 8);
        uint64_t words = fxt_record_words(h);
        if (words == 0 || off + words * 8 > limit)
            break;
        off += words * 8;
        (*nrec)++;
    }
    return off;
}

/* Write the buffer. On a failure (full disk, RLIMIT_FSIZE) keep the whole records that reached
 * the disk, truncate the torn one away, and count the rest as lost: the file stays a valid FXT
 * prefix holding everything written before the failure. */
int fxt_writer_flush(struct fxt_writer *w, struct hv_err *err)
{
    if (w->failed)
        return hv_errf(err, "an earlier write failed");
    size_t done = 0;
    while (done < w->olen) {
        ssize_t n = write(w->fd, w->obuf + done, w->olen - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENOSPC;
            int saved = errno;
            uint64_t kept_records;
            size_t kept = record_boundary(w->obuf, w->olen, done, &kept_records);
            w->file_bytes += kept;
            if (ftruncate(w->fd, (off_t)w->file_bytes) == 0)
                lseek(w->fd, (off_t)w->file_bytes, SEEK_SET);
            w->failed = true;
            w->records_lost += w->obuf_records - kept_records;
            w->olen = 0;
            w->obuf_records = 0;
            errno = saved;
            return hv_errf_errno(err, "write");
        }
        done += (size_t)n;
    }
    w->file_bytes += w->olen;
    w->olen = 0;
    w->obuf_records = 0;
    return 0;
}

/* Append one whole record (or several whole records) to the output buffer. */
static int put(struct fxt_writer *w, const uint64_t *words, size_t n, struct hv_err *err)
{
    if (w->failed) {
        w->records_lost++;
        return hv_errf(err, "an earlier write failed");
    }
    size_t bytes = n * 8;
    if (w->olen + bytes > FXT_WRITER_BUF && fxt_writer_flush(w, err) < 0) {
        w->records_lost++;
        return -1;
    }
    memcpy(w->obuf + w->olen, words, bytes);
    w->olen += bytes;
    w->obuf_records++;
    w->words_written += n;
    return 0;
}

int fxt_writer_select(struct fxt_writer *w, uint32_t provider, struct hv_err *err)
{
    if (provider >= w->nproviders)
        return hv_errf(err, "fxt writer: provider %u does not exist", provider);
    if (w->have_cur && w->cur_provider == provider)
        return 0;
    uint64_t rec[2];
    if (put(w, rec, fxt_enc_provider_section(rec, 2, provider), err))
        return -1;
    w->cur_provider = provider;
    w->have_cur = true;
    w->records_written++;
    if (!w->inited[provider]) {
        /* Readers keep the tick rate per provider (FXT spec "Provider section metadata"). */
        if (put(w, rec, fxt_enc_init(rec, 2, w->ticks_per_second), err))
            return -1;
        w->inited[provider] = 1;
        w->records_written++;
    }
    return 0;
}

int fxt_writer_append(struct fxt_writer *w, const uint64_t *words, size_t nwords,
                      struct hv_err *err)
{
    if (!w->have_cur)
        return hv_errf(err, "fxt writer: no provider selected");
    return put(w, words, nwords, err);
}

int fxt_writer_emit(struct fxt_writer *w, uint32_t provider, const uint64_t *words, size_t nwords,
                    struct hv_err *err)
{
    if (nwords == 0)
        return hv_errf(err, "fxt writer: record does not fit (encoder returned 0)");
    if (fxt_writer_select(w, provider, err) || put(w, words, nwords, err))
        return -1;
    w->records_written++;
    return 0;
}

/* The descriptor and buffers, without writing anything (a failed open). */
static void release(struct fxt_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    free(w->obuf);
    w->obuf = NULL;
    free(w->inited);
    w->inited = NULL;
}

int fxt_writer_open_fd(struct fxt_writer *w, int fd, const char *name, uint64_t ticks_per_second,
                       uint32_t nproviders, struct hv_err *err)
{
    memset(w, 0, sizeof(*w));
    w->fd = fd;
    if (ticks_per_second == 0) {
        hv_errf(err, "fxt writer: ticks per second must not be 0");
        goto fail;
    }
    if (nproviders == 0) {
        hv_errf(err, "fxt writer: no provider");
        goto fail;
    }
    w->ticks_per_second = ticks_per_second;
    w->nproviders = nproviders;
    w->inited = calloc(nproviders, 1);
    w->obuf = malloc(FXT_WRITER_BUF);
    if (!w->inited || !w->obuf) {
        hv_errf_errno(err, "fxt writer: allocating");
        goto fail;
    }
    size_t n = fxt_enc_magic(w->scratch, 1);
    if (put(w, w->scratch, n, err) || fxt_writer_flush(w, err) < 0) {
        hv_err_prefix(err, "cannot write %s", name);
        goto fail;
    }
    w->records_written++;
    return 0;
fail:
    release(w);
    return -1;
}

int fxt_writer_open(struct fxt_writer *w, const char *path, uint64_t ticks_per_second,
                    uint32_t nproviders, struct hv_err *err)
{
    /* Locked and emptied only once locked: a second writer of the same file fails, untouched
     * (common/files.h). */
    int fd = hv_open_output(path, err);
    if (fd < 0) {
        memset(w, 0, sizeof(*w));
        w->fd = -1;
        return -1;
    }
    if (fxt_writer_open_fd(w, fd, path, ticks_per_second, nproviders, err) < 0) {
        /* Not even the magic record: no file is better than one no reader accepts. */
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            unlink(path);
        return -1;
    }
    return 0;
}

/* Bytes [0, len) of `in` to the start of `out` (copy_file_range: within one file system the
 * kernel may share the blocks; else a read/write loop). */
static int copy_prefix(int in, int out, uint64_t len, uint8_t *chunk, size_t chunk_size,
                       struct hv_err *err)
{
    off_t off_in = 0, off_out = 0;
    while ((uint64_t)off_in < len) {
        ssize_t n = copy_file_range(in, &off_in, out, &off_out, len - (uint64_t)off_in, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0)
            continue;
        if (n == 0)
            return hv_errf(err, "copying: the recording is shorter than written");
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return hv_errf_errno(err, "copying");
        while ((uint64_t)off_in < len) {
            size_t want = len - (uint64_t)off_in < chunk_size ? len - (uint64_t)off_in : chunk_size;
            ssize_t r = pread(in, chunk, want, off_in);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return r == 0 ? hv_errf(err, "copying: the recording is shorter than written")
                              : hv_errf_errno(err, "copying");
            for (ssize_t done = 0; done < r;) {
                ssize_t wr = pwrite(out, chunk + done, (size_t)(r - done), off_out);
                if (wr < 0 && errno == EINTR)
                    continue;
                if (wr <= 0)
                    return hv_errf_errno(err, "write");
                done += wr;
                off_out += wr;
            }
            off_in += r;
        }
    }
    if (lseek(out, off_out, SEEK_SET) < 0)
        return hv_errf_errno(err, "seek");
    return 0;
}

int fxt_writer_open_copy_fd(struct fxt_writer *w, int fd, const char *name,
                            const struct fxt_writer *from, struct hv_err *err)
{
    memset(w, 0, sizeof(*w));
    w->fd = fd;
    if (from->fd < 0 || from->failed) {
        hv_errf(err, "fxt writer: nothing to copy from");
        goto fail;
    }
    w->inited = malloc(from->nproviders);
    w->obuf = malloc(FXT_WRITER_BUF);
    if (!w->inited || !w->obuf) {
        hv_errf_errno(err, "fxt writer: allocating");
        goto fail;
    }
    /* `from`'s descriptor is read at explicit offsets (it is open for reading too): its own
     * offset, where it appends, is not moved. The new buffer is the copy's bounce buffer,
     * before it takes `from`'s. */
    if (copy_prefix(from->fd, w->fd, from->file_bytes, w->obuf, FXT_WRITER_BUF, err) < 0) {
        hv_err_prefix(err, "cannot write %s", name);
        goto fail;
    }
    memcpy(w->inited, from->inited, from->nproviders);
    memcpy(w->obuf, from->obuf, from->olen);
    w->olen = from->olen;
    w->obuf_records = from->obuf_records;
    w->file_bytes = from->file_bytes;
    w->ticks_per_second = from->ticks_per_second;
    w->nproviders = from->nproviders;
    w->cur_provider = from->cur_provider;
    w->have_cur = from->have_cur;
    w->words_written = from->words_written;
    w->records_written = from->records_written;
    return 0;
fail:
    release(w);
    return -1;
}

int fxt_writer_open_copy(struct fxt_writer *w, const char *path, const struct fxt_writer *from,
                         struct hv_err *err)
{
    int fd = hv_open_output(path, err);
    if (fd < 0) {
        memset(w, 0, sizeof(*w));
        w->fd = -1;
        return -1;
    }
    if (fxt_writer_open_copy_fd(w, fd, path, from, err) < 0) {
        unlink(path); /* ours: just created, and only part of a copy */
        return -1;
    }
    return 0;
}

int fxt_writer_provider(struct fxt_writer *w, uint32_t id, const char *name, struct hv_err *err)
{
    if (id >= w->nproviders)
        return hv_errf(err, "fxt writer: provider %u does not exist", id);
    if (w->have_cur)
        return hv_errf(err, "fxt writer: provider %u's info after the first section", id);
    size_t len = name ? strlen(name) : 0;
    size_t n = fxt_enc_provider_info(w->scratch, FXT_MAX_RECORD_WORDS, id, name, len);
    if (n == 0)
        return hv_errf(err, "fxt writer: provider name \"%s\" too long", name);
    if (put(w, w->scratch, n, err))
        return -1;
    w->records_written++;
    return 0;
}

int fxt_writer_close(struct fxt_writer *w, struct hv_err *err)
{
    int rc = 0;
    if (w->fd >= 0) {
        if (!w->failed && fxt_writer_flush(w, err) < 0)
            rc = -1;
        if (close(w->fd) != 0 && rc == 0)
            rc = hv_errf_errno(err, "fxt writer: close");
    }
    w->fd = -1;
    free(w->obuf);
    w->obuf = NULL;
    free(w->inited);
    w->inited = NULL;
    return rc;
}

long fxt_writer_drain_ring(struct fxt_writer *w, uint32_t provider, struct fxt_ring *r, bool final,
                           struct hv_err *err)
{
    return fxt_writer_drain_ring_visit(w, provider, r, final, NULL, NULL, err);
}

long fxt_writer_drain_ring_visit(struct fxt_writer *w, uint32_t provider, struct fxt_ring *r,
                                 bool final, fxt_record_visit_fn visit, void *ctx,
                                 struct hv_err *err)
{
    if (provider >= w->nproviders)
        return hv_errf(err, "fxt writer: provider %u does not exist", provider);
    long moved = 0;
    uint32_t n;
    const uint64_t *rec;
    while ((rec = fxt_ring_peek(r, &n)) != NULL) {
        if (visit && visit(ctx, rec, n, err))
            return -1;
        if (fxt_writer_select(w, provider, err) || put(w, rec, n, err))
            return -1;
        fxt_ring_release(r, n);
        w->records_written++;
        moved++;
    }
    struct fxt_ring_loss l;
    if (final && fxt_ring_take_pending_loss(r, &l)) {
        size_t k = r->encode_loss(w->scratch, r->loss_words, &l);
        if (fxt_writer_emit(w, provider, w->scratch, k, err))
            return -1;
        moved++;
    }
    return moved;
}
