/* The FXT file writer: one file, provider 0 for the VM, provider i+1 for vCPU i (writer.h). */
#include "fxt/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

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
        uint64_t words = (h & 0xf) == 15 ? (h >> 4) & 0xffffffffull : (h >> 4) & 0xfff;
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
    if (provider > w->nvcpus)
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

static int emit_control(struct fxt_writer *w, size_t n, struct hv_err *err)
{
    return fxt_writer_emit(w, FXT_CONTROL_PROVIDER, w->scratch, n, err);
}

int fxt_writer_open(struct fxt_writer *w, const char *path, uint64_t ticks_per_second,
                    uint32_t nvcpus, const char *vm_name, struct hv_err *err)
{
    memset(w, 0, sizeof(*w));
    if (ticks_per_second == 0)
        return hv_errf(err, "fxt writer: ticks per second must not be 0");
    if (nvcpus == 0 || nvcpus > 0xefff)
        return hv_errf(err, "fxt writer: %u vCPUs out of range", nvcpus);
    w->ticks_per_second = ticks_per_second;
    w->nvcpus = nvcpus;
    w->inited = calloc((size_t)nvcpus + 1, 1);
    if (!w->inited)
        return hv_errf_errno(err, "fxt writer: allocating");
    w->fd = -1;
    w->obuf = malloc(FXT_WRITER_BUF);
    if (!w->obuf) {
        hv_errf_errno(err, "fxt writer: allocating");
        goto fail;
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        hv_errf_errno(err, "cannot create %s", path);
        goto fail;
    }
    uint64_t *s = w->scratch;
    const size_t cap = sizeof(w->scratch) / 8;
    if (put(w, s, fxt_enc_magic(s, cap), err))
        goto fail;
    w->records_written++;
    if (put(w, s, fxt_enc_provider_info(s, cap, FXT_CONTROL_PROVIDER, "hvprof", 6), err))
        goto fail;
    w->records_written++;
    for (uint32_t i = 0; i < nvcpus; i++) {
        char name[16];
        int len = snprintf(name, sizeof(name), "vcpu%u", i);
        if (put(w, s, fxt_enc_provider_info(s, cap, fxt_vcpu_provider(i), name, (size_t)len), err))
            goto fail;
        w->records_written++;
    }
    if (emit_control(w, fxt_enc_kobj_process(s, cap, HVFXT_KOID_VM, vm_name ? vm_name : "vm"),
                     err) ||
        emit_control(w, fxt_enc_kobj_thread(s, cap, HVFXT_KOID_CONTROL, "hvprof", HVFXT_KOID_VM),
                     err))
        goto fail;
    for (uint32_t i = 0; i < nvcpus; i++) {
        char name[16];
        snprintf(name, sizeof(name), "vcpu %u", i);
        if (emit_control(w, fxt_enc_kobj_thread(s, cap, hvfxt_koid_vcpu(i), name, HVFXT_KOID_VM),
                         err))
            goto fail;
    }
    /* The header records go to disk now: a file that exists is a valid (empty) recording. */
    if (fxt_writer_flush(w, err) < 0)
        goto fail;
    return 0;
fail:
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    free(w->obuf);
    w->obuf = NULL;
    free(w->inited);
    w->inited = NULL;
    return -1;
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

long fxt_writer_drain_ring(struct fxt_writer *w, uint32_t vcpu, struct fxt_ring *r, bool final,
                           struct hv_err *err)
{
    if (vcpu >= w->nvcpus)
        return hv_errf(err, "fxt writer: vCPU %u out of range", vcpu);
    uint32_t provider = fxt_vcpu_provider(vcpu);
    long moved = 0;
    uint32_t n;
    const uint64_t *rec;
    while ((rec = fxt_ring_peek(r, &n)) != NULL) {
        if (fxt_writer_select(w, provider, err) || put(w, rec, n, err))
            return -1;
        fxt_ring_release(r, n);
        w->records_written++;
        moved++;
    }
    struct fxt_loss l;
    if (final && fxt_ring_take_pending_loss(r, &l)) {
        size_t k = fxt_enc_loss(w->scratch, FXT_LOSS_WORDS, &l);
        if (fxt_writer_emit(w, provider, w->scratch, k, err))
            return -1;
        moved++;
    }
    return moved;
}

int fxt_writer_guest_process(struct fxt_writer *w, uint64_t koid, const char *name,
                             struct hv_err *err)
{
    return emit_control(w, fxt_enc_kobj_process(w->scratch, FXT_MAX_RECORD_WORDS, koid, name), err);
}

int fxt_writer_guest_thread(struct fxt_writer *w, uint64_t koid, const char *name,
                            uint64_t process_koid, struct hv_err *err)
{
    return emit_control(
        w, fxt_enc_kobj_thread(w->scratch, FXT_MAX_RECORD_WORDS, koid, name, process_koid), err);
}

int fxt_writer_marker(struct fxt_writer *w, const char *name, uint64_t ts,
                      const struct fxt_arg *args, unsigned nargs, struct hv_err *err)
{
    return emit_control(w, fxt_enc_marker(w->scratch, FXT_MAX_RECORD_WORDS, name, ts, args, nargs),
                        err);
}

int fxt_writer_module(struct fxt_writer *w, const struct fxt_module *m, struct hv_err *err)
{
    return emit_control(w, fxt_enc_module(w->scratch, FXT_MAX_RECORD_WORDS, m), err);
}

int fxt_writer_mapping(struct fxt_writer *w, const struct fxt_mapping *m, struct hv_err *err)
{
    return emit_control(w, fxt_enc_mapping(w->scratch, FXT_MAX_RECORD_WORDS, m), err);
}
