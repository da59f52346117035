/* The flight recorder: definitions to the file, samples to a bounded buffer, snapshots
 * (flight.h). */
#include "sampler/flight.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fxt/fields.h"
#include "sampler/sampler_priv.h"

static void on_evict(void *ctx, const struct fxt_flight_record *r)
{
    struct sampler *s = ctx;
    if (r->provider == HVFXT_CONTROL_PROVIDER || r->provider > s->cfg.nvcpus)
        return;
    struct fxt_ring_loss *o = &s->flight->over[r->provider - 1];
    if (!o->dropped || r->ts < o->first_ts)
        o->first_ts = r->ts;
    if (r->ts > o->last_ts)
        o->last_ts = r->ts;
    o->dropped++;
}

int sampler_flight_init(struct sampler *s, struct hv_err *err)
{
    struct sampler_flight *f = s->flight = calloc(1, sizeof(*f));
    if (!f)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    f->over = calloc(s->cfg.nvcpus, sizeof(*f->over));
    f->kept = calloc(s->cfg.ring_keep + 1, sizeof(*f->kept));
    if (!f->over || !f->kept)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    for (unsigned i = 0; i < s->cfg.nvcpus; i++)
        f->over[i].ring_id = i;
    /* Timestamps are nanoseconds (the recording's tick rate, sampler_create). */
    return fxt_flight_init(&f->buf, s->cfg.ring_bytes, s->cfg.ring_window_ns, on_evict, s, err);
}

void sampler_flight_destroy(struct sampler *s)
{
    struct sampler_flight *f = s->flight;
    if (!f)
        return;
    fxt_flight_destroy(&f->buf);
    if (f->kept)
        for (unsigned i = 0; i < f->nkept; i++)
            free(f->kept[i]);
    free(f->kept);
    free(f->over);
    free(f);
    s->flight = NULL;
}

long sampler_flight_drain_vcpu(struct sampler *s, unsigned vcpu, bool final, struct hv_err *err)
{
    struct sampler_flight *f = s->flight;
    struct fxt_ring *r = &s->core.v[vcpu].ring;
    uint32_t provider = hvfxt_vcpu_provider(vcpu);
    long moved = 0;
    uint32_t n;
    const uint64_t *rec;
    while ((rec = fxt_ring_peek(r, &n)) != NULL) {
        unsigned type = (unsigned)FXT_GET(FXT_REC_TYPE, rec[0]);
        int rc;
        if (type == FXT_RT_STRING || type == FXT_RT_THREAD) {
            /* A definition the stream's later records refer to by index: kept whole. */
            rc = fxt_writer_emit(&s->w, provider, rec, n, err);
        } else {
            uint64_t ts;
            /* What it refers to named now, while it exists (the sources' visits). */
            if (sampler_sources_visit(s, rec, n, err) < 0)
                return -1;
            if (!hvfxt_record_ts(rec, n, &ts))
                ts = f->buf.newest_ts;
            rc = fxt_flight_push(&f->buf, provider, ts, rec, n, err);
        }
        fxt_ring_release(r, n);
        if (rc < 0)
            return -1;
        moved++;
    }
    struct fxt_ring_loss l;
    if (final && fxt_ring_take_pending_loss(r, &l)) {
        size_t k = r->encode_loss(s->w.scratch, r->loss_words, &l);
        if (fxt_flight_push(&f->buf, provider, l.first_ts, s->w.scratch, (uint32_t)k, err) < 0)
            return -1;
        moved++;
    }
    return moved;
}

void sampler_flight_request(struct sampler *s)
{
    atomic_fetch_add_explicit(&s->flight->requests, 1, memory_order_relaxed);
}

/* The overwrite events, then the buffer, oldest first, into `w`. */
static int write_buffer(struct sampler *s, struct fxt_writer *w, struct hv_err *err)
{
    struct sampler_flight *f = s->flight;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        if (!f->over[i].dropped)
            continue;
        size_t k = hvfxt_enc_overwrite(w->scratch, FXT_MAX_RECORD_WORDS, &f->over[i]);
        if (fxt_writer_emit(w, hvfxt_vcpu_provider(i), w->scratch, k, err) < 0)
            return -1;
    }
    uint64_t pos = 0;
    struct fxt_flight_record r;
    while (fxt_flight_next(&f->buf, &pos, &r))
        if (fxt_writer_emit(w, r.provider, r.words, r.nwords, err) < 0)
            return -1;
    return 0;
}

/* OUT.fxt -> OUT.20261127T123456.789Z.fxt (UTC, milliseconds: two snapshots a second apart
 * sort by name and by time alike). */
static int snapshot_path(const char *out, char *buf, size_t len)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
    size_t base = strlen(out);
    if (base > 4 && !strcmp(out + base - 4, ".fxt"))
        base -= 4;
    int n = snprintf(buf, len, "%.*s.%s.%03ldZ.fxt", (int)base, out, stamp, now.tv_nsec / 1000000);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Where snapshots are made: through the recording's own directory, open since before the
 * guest ran (common/output.h), by their last component; a recording on a device has none. */
static int snap_dir(const struct sampler *s)
{
    return s->out.dirfd >= 0 ? s->out.dirfd : AT_FDCWD;
}

static const char *snap_name(const struct sampler *s, const char *path)
{
    const char *slash = strrchr(path, '/');
    return s->out.dirfd >= 0 && slash ? slash + 1 : path;
}

/* Keep at most cfg.ring_keep snapshot files of this recording: the oldest goes. */
static void keep_newest(struct sampler *s, const char *path)
{
    struct sampler_flight *f = s->flight;
    char *copy = strdup(path);
    if (!copy)
        return;
    f->kept[f->nkept++] = copy;
    while (f->nkept > s->cfg.ring_keep) {
        if (unlinkat(snap_dir(s), snap_name(s, f->kept[0]), 0) == 0)
            f->removed++;
        free(f->kept[0]);
        memmove(f->kept, f->kept + 1, --f->nkept * sizeof(*f->kept));
    }
}

static int snapshot(struct sampler *s, const char *why, struct hv_err *err)
{
    struct sampler_flight *f = s->flight;
    uint64_t t0 = hv_now_ns();
    char path[4096], part[4096 + 8];
    if (snapshot_path(s->cfg.out_path, path, sizeof(path)) < 0)
        return hv_errk(err, HV_ERR_LIMIT, "snapshot: the output's name is too long");
    /* Two in one millisecond (a signal and a panic): the second gets a suffix, never the
     * first's name. */
    if (!strcmp(path, f->last_path) && strlen(path) + 2 < sizeof(path))
        memcpy(path + strlen(path) - 4, "-2.fxt", 7);
    snprintf(part, sizeof(part), "%s.part", path);
    /* Written under another name and renamed whole: a reader of the snapshot's name never sees
     * half of one, and a failed one leaves nothing. Made new (O_EXCL, never through a link),
     * 0600 like the recording, in the recording's directory. */
    int dir = snap_dir(s);
    const char *pname = snap_name(s, part), *name = snap_name(s, path);
    int fd = openat(dir, pname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return hv_errf_errno(err, "snapshot: cannot create %s", part);
    struct fxt_writer w;
    if (fxt_writer_open_copy_fd(&w, fd, part, &s->w, err) < 0) {
        unlinkat(dir, pname, 0);
        return -1;
    }
    if (write_buffer(s, &w, err) < 0 || sampler_write_stop_marker(s, &w, why, err) < 0) {
        fxt_writer_close(&w, NULL);
        unlinkat(dir, pname, 0);
        return -1;
    }
    uint64_t bytes = w.file_bytes + w.olen;
    if (fxt_writer_close(&w, err) < 0) {
        unlinkat(dir, pname, 0);
        return -1;
    }
    if (renameat(dir, pname, dir, name) < 0) {
        hv_errf_errno(err, "snapshot: renaming %s", part);
        unlinkat(dir, pname, 0);
        return -1;
    }
    keep_newest(s, path);
    f->snapshots++;
    f->last_ns = hv_now_ns() - t0;
    if (f->last_ns > f->max_ns)
        f->max_ns = f->last_ns;
    f->last_bytes = bytes;
    snprintf(f->last_path, sizeof(f->last_path), "%s", path);
    return 0;
}

void sampler_flight_snapshot(struct sampler *s, const char *why)
{
    struct sampler_flight *f = s->flight;
    struct hv_err err = {0};
    bool tty = !s->cfg.quiet && isatty(STDERR_FILENO);
    if (snapshot(s, why, &err) < 0) {
        f->snapshot_failures++;
        fprintf(stderr, "%shvprof record: no snapshot: %s\n", tty ? "\n" : "", err.msg);
        return;
    }
    if (!s->cfg.quiet)
        fprintf(stderr,
                "%shvprof record: snapshot %s (%s): %" PRIu64
                " records, %.1f MiB, written in %.0f ms\n",
                tty ? "\n" : "", f->last_path, why, f->buf.records,
                (double)f->last_bytes / 1048576.0,
                (double)f->last_ns / 1e6);
}

void sampler_flight_poll(struct sampler *s)
{
    struct sampler_flight *f = s->flight;
    unsigned asked = atomic_load_explicit(&f->requests, memory_order_relaxed);
    if (asked == f->served)
        return;
    f->served = asked; /* several signals before one pass: one snapshot */
    sampler_flight_snapshot(s, "signal");
}

int sampler_flight_finish(struct sampler *s, struct hv_err *err)
{
    return write_buffer(s, &s->w, err);
}
