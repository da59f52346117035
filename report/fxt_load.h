/* Loading an hvprof recording (docs/fxt-samples.md) into a profile: sample records (partial
 * records joined with their completion by continuation id, per vCPU stream, RFC-0274), module
 * and mapping records, guest process/thread names (kernel object records), and the session
 * settings (sampling period, MSR_LSTAR) from the session_start marker. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "report/profile.h"

struct fxt_load_stats {
    uint64_t records, samples, completions, partial_without_completion;
    uint64_t modules, mappings, loss_records, dropped;
    bool panic; /* a guest_panic marker: the guest kernel panicked */
    uint32_t panic_cpu;
    uint64_t panic_ts;
    uint64_t overwritten; /* records a flight recording let go before its window (record --ring) */
    uint64_t symbols;     /* symbols carried in the recording (a guest kernel's) */
    /* Partial records whose completed user stack was left off: the completions would have
     * expanded the profile beyond 4 frames per 8-byte word of the file (fxt_load.c). */
    uint64_t completions_cut;
    bool session_stop; /* the recording ends with its session_stop marker */
    /* Exit events left out of a timer profile, or timer samples left out of an exit profile
     * (profile.exits; docs/exits.md). */
    uint64_t exit_events_skipped, samples_skipped;
    uint64_t off_cpu_skipped; /* off-CPU records left out of a profile of samples */
    uint64_t runtime_samples; /* samples with a language runtime's frames (Python's) */
    uint64_t runtime_codes;   /* runtime code records */
    /* Guest processes and threads the recorder saw end (identity_ended: docs/identities.md). */
    uint64_t processes_ended, threads_ended;
    /* The file ends inside a record (a copy cut short): every record before it was read; where
     * the cut record starts, its bytes there and the bytes it declares (0: inside its header). */
    bool cut;
    uint64_t cut_offset, cut_have, cut_need, file_bytes;
};

/* Frame assembly, leaf first: pc (exact; kernel iff cpl 0), the kernel stack (return addresses;
 * a first entry equal to pc is dropped: guestwalk's arrays start with the exact pc), then the
 * user stack. The user stack's first entry is the interrupted user pc (exact) when the
 * sample was taken at CPL 0 (it was walked from the user registers saved at kernel entry); at
 * CPL 3 every entry is a return address, and a first entry equal to pc is dropped as a
 * duplicate. */
int fxt_load_profile(const void *buf, size_t len, struct profile *p, struct fxt_load_stats *st,
                     void (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                     struct hv_err *err);

/* Same from a file (mapped read-only). A file that is not FXT, or FXT without hvprof's
 * provider, is rejected with a message that says so. */
int fxt_load_profile_file(const char *path, struct profile *p, struct fxt_load_stats *st,
                          void (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                          struct hv_err *err);
