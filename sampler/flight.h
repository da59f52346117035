/* The flight recorder of `hvprof record --ring` (docs/sampling.md, "A flight recorder").
 *
 * The recording's definitions — what the control provider writes (names, modules, mappings,
 * symbols, the kernel's description, session markers) and the string and thread records of the
 * vCPU streams — go to the output file as always, bounded by the metadata budget. Everything
 * else a vCPU stream holds (samples, completions, loss records) goes to one bounded buffer
 * (fxt/flight.h) that overwrites its oldest records and counts them per vCPU. A snapshot is the
 * output file so far, copied, then one "records_overwritten" event per vCPU that lost records,
 * then the buffer, oldest first, then a session_stop marker: a complete recording of the last
 * SIZE bytes or SECONDS. The file itself gets the same at the end of the recording.
 *
 * All of it runs on the drain thread, except sampler_flight_request (a signal handler's). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "fxt/flight.h"
#include "fxt/ring.h"

struct sampler;

struct sampler_flight {
    struct fxt_flight buf;
    struct fxt_ring_loss *over; /* per vCPU: records overwritten, first and last timestamps */
    atomic_uint requests;       /* snapshots asked for (SIGUSR2) */
    unsigned served;
    char **kept; /* snapshot files of this recording, oldest first, at most cfg.ring_keep */
    unsigned nkept;
    uint64_t snapshots, snapshot_failures, removed;
    uint64_t last_ns, max_ns; /* time the last / the slowest snapshot took */
    uint64_t last_bytes;
    char last_path[4096];
};

int sampler_flight_init(struct sampler *s, struct hv_err *err);
void sampler_flight_destroy(struct sampler *s);
/* Move vCPU `vcpu`'s ring: definitions to the file, the rest into the buffer. Returns the
 * records moved, or -1. */
long sampler_flight_drain_vcpu(struct sampler *s, unsigned vcpu, bool final, struct hv_err *err);
/* Ask for a snapshot (async-signal-safe). */
void sampler_flight_request(struct sampler *s);
/* Write the snapshots asked for since the last call. A snapshot that cannot be written is
 * reported on stderr and counted; the recording goes on. */
void sampler_flight_poll(struct sampler *s);
/* Write one snapshot now (`why`: "signal", "panic"); reported on stderr like the polled ones. */
void sampler_flight_snapshot(struct sampler *s, const char *why);
/* At the end: the overwrite events and the buffer into the output file itself (before its
 * session_stop marker). */
int sampler_flight_finish(struct sampler *s, struct hv_err *err);
