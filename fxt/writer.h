/* The FXT file writer (drain side). One file holds the whole recording; each vCPU is its own
 * FXT stream in the spec's sense: provider id = vCPU index + 1, named "vcpu<i>", with its own
 * string/thread tables and its own initialization record. Provider 0 ("hvprof") carries what is
 * not per vCPU: the kernel object records naming the VM, the vCPUs, guest address spaces and
 * threads, session markers, module and mapping records. Before each chunk of a provider's records
 * the writer emits a provider section record (only when the current provider changes); the first
 * time a provider is selected it also writes the initialization record (ticks per second), since
 * readers keep the tick rate per provider. All provider info records are written by
 * fxt_writer_open, before any section (Perfetto requires info before section).
 *
 * Not thread-safe: one drain thread owns the writer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "fxt/encode.h"

struct fxt_ring;

#define FXT_CONTROL_PROVIDER 0u
static inline uint32_t fxt_vcpu_provider(uint32_t vcpu)
{
    return vcpu + 1;
}

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
    uint32_t nvcpus;
    uint32_t cur_provider;
    bool have_cur;
    uint8_t *inited; /* per provider: initialization record written */
    uint64_t words_written, records_written;
    uint64_t scratch[FXT_MAX_RECORD_WORDS + 1];
};

/* Create `path`; write the magic record, provider info for provider 0 ("hvprof") and for every
 * vCPU provider, then select provider 0 (section + initialization), and name the VM process,
 * the control thread and each vCPU thread with kernel object records (koids: hvprof_format.h). */
int fxt_writer_open(struct fxt_writer *w, const char *path, uint64_t ticks_per_second,
                    uint32_t nvcpus, const char *vm_name, struct hv_err *err);
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

/* Move everything committed in vCPU `vcpu`'s ring to the file, under its provider. With
 * final=true (the producer has stopped) pending drops are written as a loss record too.
 * Returns the number of records moved, or -1. */
long fxt_writer_drain_ring(struct fxt_writer *w, uint32_t vcpu, struct fxt_ring *r, bool final,
                           struct hv_err *err);

/* Control-provider helpers (provider 0). */
int fxt_writer_guest_process(struct fxt_writer *w, uint64_t koid, const char *name,
                             struct hv_err *err);
int fxt_writer_guest_thread(struct fxt_writer *w, uint64_t koid, const char *name,
                            uint64_t process_koid, struct hv_err *err);
int fxt_writer_marker(struct fxt_writer *w, const char *name, uint64_t ts,
                      const struct fxt_arg *args, unsigned nargs, struct hv_err *err);
int fxt_writer_module(struct fxt_writer *w, const struct fxt_module *m, struct hv_err *err);
int fxt_writer_mapping(struct fxt_writer *w, const struct fxt_mapping *m, struct hv_err *err);
