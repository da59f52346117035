/* The drain thread: one pass every DRAIN_INTERVAL_NS moves committed records from every vCPU
 * ring into the FXT file, names new guest address spaces and threads (names.c: kernel object
 * records on the control provider, written before the samples that use them), and runs the
 * recorder's sources at their stages (sampler/source/source.h has the pass's order), then
 * shows progress. It is the only thread that touches the file. On a write error (full disk,
 * RLIMIT_FSIZE) or a source's failure it stops the VM: records the vCPUs produce after that
 * are dropped and counted, never half-written. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "schema/recording.h"
#include "sandbox/sandbox.h"
#include "sampler/flight.h"
#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"

#define DRAIN_INTERVAL_NS 10000000ull /* 10 ms: at 4 kHz a vCPU commits ~40 records */
/* Each stage of a pass does guest-driven work (reading the guest's page tables, images and
 * tables) for this long at most, then leaves the rest to the next pass: the rings are moved to
 * the file every pass whatever the guest shows, and a stop waits for one unit of work at most.
 * A unit is bounded on its own (a look at one address space: DISCOVER_GUEST_MAX_ENTRIES page
 * table entries, ~25 ms for the worst tables; one module's symbols: the metadata budget). The
 * final pass, after the guest stopped, gets a longer slice for what the last samples need. */
#define DRAIN_STAGE_NS       20000000ull  /* 20 ms */
#define DRAIN_FINAL_STAGE_NS 150000000ull /* 150 ms */

void sampler_stage_begin(struct sampler *s)
{
    s->stage_deadline_ns = hv_now_ns() + (s->final_pass ? DRAIN_FINAL_STAGE_NS : DRAIN_STAGE_NS);
}

bool sampler_drain_may_work(const struct sampler *s)
{
    if (!s->final_pass && atomic_load_explicit(&s->drain_stop, memory_order_relaxed))
        return false;
    return !s->stage_deadline_ns || hv_now_ns() < s->stage_deadline_ns;
}

static void progress(struct sampler *s, uint64_t now, bool final)
{
    if (s->cfg.quiet || s->cfg.no_progress || !isatty(STDERR_FILENO))
        return;
    if (!final && now - s->last_progress_ns < 1000000000ull)
        return;
    s->last_progress_ns = now;
    uint64_t samples = 0, dropped = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        const struct vcpu_stats *st = &s->core.v[i].st;
        samples += st->user + st->kernel + st->idle;
        dropped += fxt_ring_dropped_total(&s->core.v[i].ring);
    }
    fprintf(stderr, "\rhvprof record: %.1f s, %" PRIu64 " samples, %" PRIu64 " dropped%s",
            (double)(now - s->start_ns) / 1e9, samples, dropped, final ? "\n" : "");
}

int sampler_drain_once(struct sampler *s, bool final)
{
    struct hv_err err = {0};
    if (atomic_load(&s->write_failed))
        return -1;
    s->final_pass = final;
    if (sampler_sources_poll(s, REC_STAGE_VISIT, hv_now_ns(), final, &err) < 0)
        goto fail;
    /* Names first, so that every record below refers to an identity already named. */
    sampler_stage_begin(s);
    if (sampler_name_identities(s, &err) < 0)
        goto fail;
    if (sampler_sources_poll(s, REC_STAGE_NAMED, hv_now_ns(), final, &err) < 0 ||
        sampler_sources_poll(s, REC_STAGE_GUEST, hv_now_ns(), final, &err) < 0)
        goto fail;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        uint64_t w0 = s->w.words_written;
        /* Each record is shown to the sources first (what it refers to named as it goes). */
        long n = s->flight_on ? sampler_flight_drain_vcpu(s, i, final, &err)
                              : fxt_writer_drain_ring_visit(&s->w, hvfxt_vcpu_provider(i),
                                                            &s->core.v[i].ring, final,
                                                            sampler_sources_visit, s, &err);
        s->meta.not_meta += (s->w.words_written - w0) * 8;
        if (n < 0)
            goto fail;
        s->drained_records += (uint64_t)n;
    }
    /* After the rings: a copy's sample is in the file before its completion, a flight
     * recorder's panic snapshot holds the samples up to it. */
    if (sampler_sources_poll(s, REC_STAGE_DRAINED, hv_now_ns(), final, &err) < 0)
        goto fail;
    /* After the rings too: an identity's samples so far are in the file before its end. */
    if (!final && sampler_reclaim_pass(s, hv_now_ns(), &err) < 0)
        goto fail;
    /* To the file every pass (record-aligned writes): a SIGKILL, crash or OOM kill loses at most
     * what the rings took since the last pass, not the writer's whole buffer
     * (docs/reliability.md, "What a kill loses"). */
    if (fxt_writer_flush(&s->w, &err) < 0)
        goto fail;
    if (s->flight_on && !final)
        sampler_flight_poll(s);
    progress(s, hv_now_ns(), final);
    return 0;
fail:
    /* A source's failure is named by sampler_sources_*; the core's own are the file's. */
    if (strncmp(err.msg, "recorder source ", 16))
        hv_err_prefix(&err, "cannot write %s", s->cfg.out_path);
    s->write_err = err;
    atomic_store(&s->write_failed, true);
    if (s->vm)
        vm_request_stop(s->vm, VM_STOP_ERROR, 1, -1, err.msg);
    return -1;
}

static void *drain_main(void *arg)
{
    struct sampler *s = arg;
    pthread_setname_np(pthread_self(), "hvprof-drain");
    sandbox_thread_enter(SANDBOX_DRAIN); /* files and the terminal; no socket, no process */
    hv_signals_block();
    while (!atomic_load(&s->drain_stop)) {
        if (sampler_drain_once(s, false) < 0)
            break;
        struct timespec ts = {0, DRAIN_INTERVAL_NS};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int sampler_drain_start(struct sampler *s, struct hv_err *err)
{
    int rc = pthread_create(&s->drain, NULL, drain_main, s);
    if (rc != 0) {
        errno = rc;
        return hv_errf_errno(err, "cannot start the drain thread");
    }
    s->drain_started = true;
    return 0;
}

void sampler_drain_stop(struct sampler *s)
{
    if (!s->drain_started)
        return;
    atomic_store(&s->drain_stop, true);
    pthread_join(s->drain, NULL);
    s->drain_started = false;
}
