/* The drain thread: moves committed records from every vCPU ring into the FXT file, names new
 * guest address spaces and threads (kernel object records on the control provider, written
 * before the samples that use them), discovers their modules, and shows progress. It is the only
 * thread that touches the file. On a write error (full disk, RLIMIT_FSIZE) it stops the VM:
 * records the vCPUs produce after that are dropped and counted, never half-written. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "schema/recording.h"
#include "sandbox/sandbox.h"
#include "sampler/sampler_priv.h"

#define DRAIN_INTERVAL_NS 10000000ull /* 10 ms: at 4 kHz a vCPU commits ~40 records */
#define NAME_RECORD_COST  128u        /* a kernel object record with a 64-byte name */
/* Each stage of a pass does guest-driven work (reading the guest's page tables, images and
 * tables) for this long at most, then leaves the rest to the next pass: the rings are moved to
 * the file every pass whatever the guest shows, and a stop waits for one unit of work at most.
 * A unit is bounded on its own (a look at one address space: DISCOVER_GUEST_MAX_ENTRIES page
 * table entries, ~25 ms for the worst tables; one module's symbols: the metadata budget). The
 * final pass, after the guest stopped, gets a longer slice for what the last samples need. */
#define DRAIN_STAGE_NS       20000000ull  /* 20 ms */
#define DRAIN_FINAL_STAGE_NS 150000000ull /* 150 ms */

static void stage_begin(struct sampler *s)
{
    s->stage_deadline_ns = hv_now_ns() + (s->final_pass ? DRAIN_FINAL_STAGE_NS : DRAIN_STAGE_NS);
}

bool sampler_drain_may_work(const struct sampler *s)
{
    if (!s->final_pass && atomic_load_explicit(&s->drain_stop, memory_order_relaxed))
        return false;
    return !s->stage_deadline_ns || hv_now_ns() < s->stage_deadline_ns;
}

/* A process's name and guest pid: what its label says, else its address space. */
static void proc_name(const struct id_proc *p, uint32_t id, char *name, size_t len, int64_t *pid,
                      uint32_t *seq)
{
    struct id_label_value v;
    bool labelled = id_label_get(&p->label, &v);
    *seq = labelled ? v.seq : 0;
    *pid = labelled ? v.guest_id : -1;
    if (labelled && v.comm[0])
        snprintf(name, len, "%s", v.comm);
    else
        snprintf(name, len, "as%u cr3=0x%" PRIx64, id, p->info.cr3);
}

static void thread_name(const struct id_thread *t, uint32_t id, char *name, size_t len,
                        int64_t *tid, uint32_t *seq)
{
    struct id_label_value v;
    bool labelled = id_label_get(&t->label, &v);
    *seq = labelled ? v.seq : 0;
    *tid = labelled ? v.guest_id : -1;
    if (labelled && v.comm[0])
        snprintf(name, len, "%s", v.comm);
    else
        snprintf(name, len, "t%u fs=0x%" PRIx64, id, t->thread_key);
}

/* Label changed since the last record named it (read without the full copy first). */
static bool relabelled(const struct id_label *l, uint32_t named_seq)
{
    uint32_t seq = atomic_load_explicit(&l->seq, memory_order_acquire);
    return seq != named_seq && !(seq & 1);
}

/* New identities get their kernel object record; one whose label changed (the guest renamed it,
 * or its leader was seen) gets another, which replaces the name from there on. */
static int name_new_identities(struct sampler *s, struct hv_err *err)
{
    char name[64];
    stage_begin(s);
    for (uint32_t id = 1; id <= ID_MAX_PROCS; id++) {
        uint8_t state = s->proc_named[id - 1];
        const struct id_proc *p = id_proc_at(s->core.ids, id);
        if (!p)
            continue;
        if (!state || relabelled(&p->label, s->proc_seq[id - 1])) {
            int64_t pid;
            proc_name(p, id, name, sizeof(name), &pid, &s->proc_seq[id - 1]);
            /* A first name always (samples refer to it); a new name within the budget. */
            if ((!state || meta_budget_allows(&s->meta, NAME_RECORD_COST)) &&
                hvfxt_write_guest_process(&s->w, id, name, pid, err) < 0)
                return -1;
            if (!state)
                s->proc_named[id - 1] = state = 1;
        }
        if (state != 1)
            continue;
        /* The first look at its modules, while this pass's slice lasts (a guest showing a
         * thousand new address spaces at once is looked at over many passes). A kernel thread
         * has no user address space to look into. */
        if (p->info.cr3 && !sampler_drain_may_work(s))
            continue;
        if (p->info.cr3 && sampler_modules_discover(s, id, p, err) < 0)
            return -1;
        s->proc_named[id - 1] = 2;
    }
    for (uint32_t id = 1; id <= ID_MAX_THREADS; id++) {
        const struct id_thread *t = id_thread_at(s->core.ids, id);
        if (!t || (s->thread_named[id - 1] && !relabelled(&t->label, s->thread_seq[id - 1])))
            continue;
        int64_t tid;
        thread_name(t, id, name, sizeof(name), &tid, &s->thread_seq[id - 1]);
        if (s->thread_named[id - 1] && !meta_budget_allows(&s->meta, NAME_RECORD_COST))
            continue;
        if (hvfxt_write_guest_thread(&s->w, id, t->proc, name, tid, err) < 0)
            return -1;
        s->thread_named[id - 1] = 1;
    }
    return 0;
}

static void progress(struct sampler *s, uint64_t now, bool final)
{
    if (s->cfg.quiet || !isatty(STDERR_FILENO))
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
    /* A visit of the guest's threads for their off-CPU time: it may meet threads no exit
     * showed yet, so its records wait for the names below. */
    stage_begin(s);
    if (sampler_off_cpu_poll(s, hv_now_ns(), final, &err) < 0)
        goto fail;
    /* Names first, so that every record below refers to an identity already named. */
    if (name_new_identities(s, &err) < 0 || sampler_off_cpu_emit(s, &err) < 0)
        goto fail;
    /* The kernel's description: one bounded unit, a few looks a second at most. */
    stage_begin(s);
    if (s->mem && sampler_drain_may_work(s) && sampler_kernel_poll(s, hv_now_ns(), final, &err) < 0)
        goto fail;
    stage_begin(s);
    if (s->mem && sampler_kmods_poll(s, hv_now_ns(), final, &err) < 0)
        goto fail;
    stage_begin(s);
    if (s->mem && sampler_modules_poll(s, hv_now_ns(), &err) < 0)
        goto fail;
    if (s->mem)
        sampler_python_poll(s, hv_now_ns());
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        uint64_t w0 = s->w.words_written;
        /* Each sample's Python code objects are named as it goes (python.c). */
        long n = s->flight_on ? sampler_flight_drain_vcpu(s, i, final, &err)
                              : fxt_writer_drain_ring_visit(&s->w, hvfxt_vcpu_provider(i),
                                                            &s->core.v[i].ring, final,
                                                            sampler_python_visit, s, &err);
        s->meta.not_meta += (s->w.words_written - w0) * 8;
        if (n < 0)
            goto fail;
        s->drained_records += (uint64_t)n;
    }
    /* After the rings, so that a copy's sample is in the file before its completion: the
     * stacks copied for code without tables yet (copied_stacks.c). */
    stage_begin(s);
    if (sampler_copies_poll(s, hv_now_ns(), final, &err) < 0)
        goto fail;
    if (sampler_steal_poll(s, hv_now_ns(), &err) < 0)
        goto fail;
    /* After the rings: a flight recorder's panic snapshot holds the samples up to it. */
    if (s->mem && sampler_kernel_watch_panic(s, hv_now_ns(), final, &err) < 0)
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
