/* A generic FXT file writer (drain side). One file holds several FXT streams in the spec's sense,
 * one per provider (ids 0 .. nproviders-1), each with its own string/thread tables and its own
 * initialization record. Before each chunk of a provider's records the writer emits a provider
 * section record (only when the current provider changes); the first time a provider is selected
 * it also writes the initialization record (ticks per second), since readers keep the tick rate
 * per provider. Provider info records must all come first (Perfetto requires info before any
 * section): fxt_writer_provider() refuses one after the first section.
 *
 * What goes into the streams is the caller's schema; hvprof's is schema/recording.h.
 * Not thread-safe: one drain thread owns the writer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "fxt/encode.h"

struct fxt_ring;

/* Output buffer: whole records only, written with write(2) when full and at close. A failed or
 * short write (full disk, RLIMIT_FSIZE) is rolled back with ftruncate to the end of the last
 * complete buffer, so the file on disk always ends at a record boundary: a valid FXT prefix.
 * After a failure every further record is counted in `records_lost` and not written. */
#define FXT_WRITER_BUF (256u << 10)

struct fxt_writer {
    int fd;
    uint8_t *obuf;
    size_t olen;
    uint64_t obuf_records; /* records in obuf */
    uint64_t file_bytes;   /* bytes on disk, always a record boundary */
    bool failed;
    uint64_t records_lost; /* records not written because of a write failure */
    uint64_t ticks_per_second;
    uint32_t nproviders;
    uint32_t cur_provider;
    bool have_cur;
    uint8_t *inited; /* per provider: initialization record written */
    uint64_t words_written, records_written;
    uint64_t scratch[FXT_MAX_RECORD_WORDS + 1]; /* for callers that encode one record */
};

/* Create `path` for providers 0 .. nproviders-1 and write the magic record. The magic is on
 * disk when this returns: a file that exists is a valid (empty) FXT file. */
int fxt_writer_open(struct fxt_writer *w, const char *path, uint64_t ticks_per_second,
                    uint32_t nproviders, struct hv_err *err);
/* The same into an open, empty file (opened for reading too, so that a copy can read it back;
 * the writer owns fd from now on, and closes it on failure). `name` is for messages. */
int fxt_writer_open_fd(struct fxt_writer *w, int fd, const char *name, uint64_t ticks_per_second,
                       uint32_t nproviders, struct hv_err *err);
/* Create `path` holding what `from` holds so far (its file and its buffer), in the same state:
 * the same providers, initialized alike, so appending to it continues `from`'s streams. `from`
 * is not changed; its file offset is not used. (hvprof's flight recorder: a snapshot is the
 * recording's definitions, copied, and then the newest samples.) */
int fxt_writer_open_copy(struct fxt_writer *w, const char *path, const struct fxt_writer *from,
                         struct hv_err *err);
/* The same into an open, empty file (the writer owns fd from now on). */
int fxt_writer_open_copy_fd(struct fxt_writer *w, int fd, const char *name,
                            const struct fxt_writer *from, struct hv_err *err);
/* The provider info record of `id`; only before the first provider section. */
int fxt_writer_provider(struct fxt_writer *w, uint32_t id, const char *name, struct hv_err *err);
/* Write what is buffered (record-aligned); -1 after a write failure. */
int fxt_writer_flush(struct fxt_writer *w, struct hv_err *err);
/* Flush and close; the file is complete after this. */
int fxt_writer_close(struct fxt_writer *w, struct hv_err *err);

/* Make `provider` current (provider section record if it changes; initialization record the
 * first time). */
int fxt_writer_select(struct fxt_writer *w, uint32_t provider, struct hv_err *err);
/* Append complete records (nwords words) to the current provider. */
int fxt_writer_append(struct fxt_writer *w, const uint64_t *words, size_t nwords,
                      struct hv_err *err);
/* Append to a given provider (select + append). */
int fxt_writer_emit(struct fxt_writer *w, uint32_t provider, const uint64_t *words, size_t nwords,
                    struct hv_err *err);

/* Move everything committed in ring `r` to the file, under `provider`. With final=true (the
 * producer has stopped) pending drops are written as a loss record too (the ring's encoder).
 * Returns the number of records moved, or -1. */
/* A look at each record drain_ring moves, before it is written (the caller may write records
 * of its own there, under another provider). Nonzero: the drain fails with err. */
typedef int (*fxt_record_visit_fn)(void *ctx, const uint64_t *rec, uint32_t nwords,
                                   struct hv_err *err);
long fxt_writer_drain_ring_visit(struct fxt_writer *w, uint32_t provider, struct fxt_ring *r,
                                 bool final, fxt_record_visit_fn visit, void *ctx,
                                 struct hv_err *err);
long fxt_writer_drain_ring(struct fxt_writer *w, uint32_t provider, struct fxt_ring *r, bool final,
                           struct hv_err *err);
