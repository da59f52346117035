/* The recorder's life cycle (sampler.h; its states in sampler_priv.h): set-up, the recording's
 * start and end markers, tear-down, and the summary's frame around the sources' own lines. The
 * exit path is the exit core's (sampler/exit/), the file side the drain thread's (drain.c). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/recording.h"
#include "common/output.h"
#include "sampler/flight.h"
#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"

#include "build_info.h"

static const char *mode_name(enum sampler_mode m)
{
    switch (m) {
    case SAMPLER_MODE_CPU:
        return "cpu";
    case SAMPLER_MODE_WALL:
        return "wall";
    default:
        return "exits";
    }
}

/* CPUID.01H:ECX[31] is reserved for hypervisors to set (SDM Vol. 2A, CPUID, "Not used" bit
 * 31; every hypervisor sets it): when it is set here, hvprof runs inside a VM itself. */
static bool host_is_virtualized(void)
{
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
    return (c >> 31) & 1;
}

/* The ring holds whole records; its capacity is a power of two of at least 4096 words
 * (fxt/ring.h), rounded up from --buffer. */
static uint64_t ring_words(uint64_t bytes)
{
    uint64_t words = 4096;
    while (words * 8 < bytes && words < (1ull << 32))
        words <<= 1;
    return words;
}

struct sampler *sampler_create(const struct sampler_config *cfg, struct hv_err *err)
{
    if (cfg->nvcpus == 0 || cfg->hz == 0 || cfg->max_depth == 0 ||
        cfg->max_depth > EXIT_MAX_FRAMES) {
        hv_errf(err, "sampler: invalid configuration");
        return NULL;
    }
    struct sampler *s = calloc(1, sizeof(*s));
    if (!s) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->out.fd = s->out.dirfd = -1;
    s->host_virtualized = host_is_virtualized();
    s->period_ns = 1000000000ull / cfg->hz;
    if (s->period_ns == 0)
        s->period_ns = 1;
    s->core.ids = malloc(sizeof(*s->core.ids));
    s->core.v = calloc(cfg->nvcpus, sizeof(*s->core.v));
    s->proc_named = calloc(ID_MAX_PROCS, 1);
    s->thread_named = calloc(ID_MAX_THREADS, 1);
    s->proc_seq = calloc(ID_MAX_PROCS, sizeof(*s->proc_seq));
    s->thread_seq = calloc(ID_MAX_THREADS, sizeof(*s->thread_seq));
    s->looked = calloc(ID_MAX_PROCS, sizeof(*s->looked));
    s->reclaim = sampler_reclaim_create(cfg->nvcpus);
    discover_registry_init(&s->modules);
    if (!s->core.ids || !s->core.v || !s->proc_named || !s->thread_named || !s->proc_seq ||
        !s->thread_seq || !s->looked || !s->reclaim) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        sampler_destroy(s);
        return NULL;
    }
    id_table_init(s->core.ids);
    s->core.cfg = (struct exit_config){
        .mode = cfg->mode,
        .max_depth = cfg->max_depth,
        .recheck_ns = cfg->recheck_ns,
        .defer_user_stacks = cfg->defer_user_stacks,
        .exit_events = cfg->exit_events,
        .exit_every = cfg->exit_every,
    };
    if (cfg->exit_events && cfg->mode == SAMPLER_MODE_EXITS) {
        hv_errf(err, "--events exits records the guest's stacks: not with --mode exits");
        sampler_destroy(s);
        return NULL;
    }
    s->core.nvcpus = cfg->nvcpus;
    if (guestos_open(&s->os, cfg->guest_os ? cfg->guest_os : "generic", err) < 0) {
        sampler_destroy(s);
        return NULL;
    }
    s->core.os = &s->os;
    for (unsigned i = 0; i < cfg->nvcpus; i++) {
        struct exit_vcpu *sv = &s->core.v[i];
        sv->core = &s->core;
        sv->index = i;
        sv->period_ns = s->period_ns;
        sv->st.sched_fd = -1;
        guestos_vcpu_init(&s->os, &sv->os);
        sv->os.vcpu = i;
        uint64_t floor_ticks = (SAMPLER_ABANDON_MIN_NS + s->period_ns - 1) / s->period_ns;
        sv->abandon_ticks = cfg->abandon_periods > floor_ticks ? cfg->abandon_periods : floor_ticks;
        if (hvfxt_vcpu_ring_init(&sv->ring, ring_words(cfg->buffer_bytes), i, err) < 0) {
            sampler_destroy(s);
            return NULL;
        }
    }
    /* Open the output now: an unwritable path is reported before the guest boots. It is
     * NAME.part until the recording starts (sampler_attach), so a guest that never boots
     * leaves NAME as it was (common/output.h). */
    unsigned oflags = HV_OUTPUT_RECORDING | (cfg->force_output ? HV_OUTPUT_FORCE : 0);
    if (hv_output_open(&s->out, AT_FDCWD, cfg->out_path, oflags, err) < 0) {
        sampler_destroy(s);
        return NULL;
    }
    int fd = s->out.fd;
    s->out.fd = -1; /* the writer's now */
    if (hvfxt_recording_open_fd(&s->w, fd, cfg->out_path, 1000000000ull, cfg->nvcpus,
                                cfg->vm_name ? cfg->vm_name : "guest", err) < 0) {
        sampler_destroy(s);
        return NULL;
    }
    s->writer_open = true;
    if (cfg->ring_bytes) {
        if (sampler_flight_init(s, err) < 0) {
            sampler_destroy(s);
            return NULL;
        }
        s->flight_on = true;
    }
    /* The sources last: they may hand the exit core what it reads (its CFI maps, Python
     * runtimes, copy queues) before any vCPU runs. */
    if (sampler_sources_create(s, err) < 0) {
        sampler_destroy(s);
        return NULL;
    }
    s->state = SAMPLER_CREATED;
    return s;
}

void sampler_guest_stopped(struct sampler *s, const char *why)
{
    s->guest_stop = why;
}

void sampler_request_snapshot(struct sampler *s)
{
    if (s && s->flight_on)
        sampler_flight_request(s);
}

int sampler_attach(struct sampler *s, struct vm *vm, const struct boot_kernel_image *kernel,
                   struct hv_err *err)
{
    s->vm = vm;
    s->mem = vm_gmem(vm);
    s->start_ns = hv_now_ns();
    struct fxt_arg args[] = {
        {.type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_HZ), .v.u64 = s->cfg.hz},
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline("mode"),
         .v.str = fxt_str_inline(mode_name(s->cfg.mode))},
        {.type = FXT_ARG_U32, .name = fxt_str_inline("vcpus"), .v.u32 = s->cfg.nvcpus},
        {.type = FXT_ARG_U32, .name = fxt_str_inline("max_depth"), .v.u32 = s->cfg.max_depth},
        {.type = FXT_ARG_U64, .name = fxt_str_inline("buffer_bytes"), .v.u64 = s->cfg.buffer_bytes},
        {.type = FXT_ARG_U64, .name = fxt_str_inline("recheck_ns"), .v.u64 = s->cfg.recheck_ns},
        {.type = FXT_ARG_U32,
         .name = fxt_str_inline("abandon_periods"),
         .v.u32 = s->cfg.abandon_periods},
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline("guest"),
         .v.str = fxt_str_inline(s->cfg.guest_desc ? s->cfg.guest_desc : "")},
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline(HVFXT_ARG_SYMBOL_DIR),
         .v.str = fxt_str_inline(s->cfg.symbol_dir ? s->cfg.symbol_dir : "")},
        /* Exit events: the stacks of every Nth exit of a vCPU, 0 for the budget's choice (the
         * summary says how many had them); absent without --events exits. */
        {.type = FXT_ARG_U32,
         .name = fxt_str_inline("exit_stacks_every"),
         .v.u32 = s->cfg.exit_every},
        /* Off-CPU visits a second; absent without --off-cpu. */
        {.type = FXT_ARG_U64, .name = fxt_str_inline("off_cpu_hz"), .v.u64 = s->cfg.off_cpu_hz},
    };
    unsigned nargs = sizeof(args) / sizeof(args[0]) - 2;
    if (s->cfg.exit_events)
        args[nargs++] = args[sizeof(args) / sizeof(args[0]) - 2];
    if (s->cfg.off_cpu_hz)
        args[nargs++] = args[sizeof(args) / sizeof(args[0]) - 1];
    if (hvfxt_write_marker(&s->w, HVFXT_SESSION_START, s->start_ns, args, nargs, err) < 0)
        return -1;
    /* The wall-clock start beside the monotonic one: report --header prints when it ran. */
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    struct fxt_arg info[] = {
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline(HVFXT_ARG_VERSION),
         .v.str = fxt_str_inline(HVPROF_VERSION_STRING)},
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline(HVFXT_ARG_COMMAND),
         .v.str = fxt_str_inline(s->cfg.command_line ? s->cfg.command_line : "")},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_START_UNIX_NS),
         .v.u64 = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec},
    };
    if (hvfxt_write_marker(&s->w, HVFXT_SESSION_INFO, s->start_ns, info, 3, err) < 0)
        return -1;
    /* From here on, what is not moved from a vCPU ring is metadata (meta_budget.h). */
    s->meta = (struct meta_budget){
        .max = s->cfg.max_metadata ? s->cfg.max_metadata : META_BUDGET_DEFAULT,
        .w = &s->w,
        .not_meta = s->w.words_written * 8,
    };
    s->modules.budget = &s->meta;
    /* The VMM loaded the kernel itself: record it as the kernel half's module, so `report`
     * finds its symbols by build-id like any guest module's. */
    if (s->cfg.kernel_elf && kernel && kernel->nseg &&
        sampler_modules_kernel_image(s, s->cfg.kernel_elf, kernel, err) < 0)
        return -1;
    /* A bzImage: where its decompressor runs, so that the boot's first samples say so. */
    if (kernel && !kernel->nseg && kernel->bz_end > kernel->bz_start &&
        sampler_modules_decompressor(s, kernel->bz_start, kernel->bz_end, err) < 0)
        return -1;
    /* Wall mode samples every vCPU at every tick, the ones the guest has not started yet too:
     * they wait at the reset vector, which then says so (docs/report.md). */
    if (kernel && s->cfg.mode == SAMPLER_MODE_WALL && s->cfg.nvcpus > 1 &&
        sampler_modules_reset_vector(s, err) < 0)
        return -1;
    /* What the sources record once (the exit sites' names). */
    if (sampler_sources_begin(s, err) < 0)
        return -1;
    /* The recording begins: the file takes its name (an earlier recording kept as .old). */
    if (hv_output_commit(&s->out, err) < 0)
        return -1;
    s->state = SAMPLER_ATTACHED;
    return 0;
}

int sampler_start(struct sampler *s, struct hv_err *err)
{
    if (s->state != SAMPLER_ATTACHED)
        return hv_errf(err, "recorder: started before sampler_attach");
    if (sampler_drain_start(s, err) < 0)
        return -1;
    s->state = SAMPLER_RUNNING;
    return 0;
}

int sampler_output_fd(const struct sampler *s)
{
    return s->writer_open ? s->w.fd : -1;
}

int sampler_write_stop_marker(struct sampler *s, struct fxt_writer *w, const char *snapshot,
                              struct hv_err *err)
{
    struct sampler_totals t;
    sampler_get_totals(s, &t);
    uint64_t overwritten = 0;
    for (unsigned i = 0; s->flight_on && i < s->cfg.nvcpus; i++)
        overwritten += s->flight->over[i].dropped;
    struct fxt_arg args[] = {
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline("samples"),
         .v.u64 = t.user + t.kernel + t.idle},
        {.type = FXT_ARG_U64, .name = fxt_str_inline("dropped"), .v.u64 = t.dropped},
        {.type = FXT_ARG_U64, .name = fxt_str_inline("completed"), .v.u64 = t.completed},
        {.type = FXT_ARG_U64, .name = fxt_str_inline("abandoned"), .v.u64 = t.abandoned},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_LSTAR),
         .v.u64 = atomic_load(&s->lstar)},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_METADATA_BYTES),
         .v.u64 = meta_budget_used(&s->meta)},
        {.type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_METADATA_MAX), .v.u64 = s->meta.max},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_METADATA_CUT_TABLES),
         .v.u64 = s->meta.cut_symbol_tables},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_METADATA_CUT_RECORDS),
         .v.u64 = s->meta.cut_records},
        /* A flight recording's: why this file, the ring, what it let go. */
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline(HVFXT_ARG_SNAPSHOT),
         .v.str = fxt_str_inline(snapshot ? snapshot : "")},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_RING_BYTES),
         .v.u64 = s->cfg.ring_bytes},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_RING_WINDOW_NS),
         .v.u64 = s->cfg.ring_window_ns},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_OVERWRITE_ARG_COUNT),
         .v.u64 = overwritten},
    };
    unsigned nargs = sizeof(args) / sizeof(args[0]);
    if (!snapshot)
        nargs -= 4;
    return hvfxt_write_marker(w, HVFXT_SESSION_STOP, hv_now_ns(), args, nargs, err);
}

int sampler_finish(struct sampler *s, struct hv_err *err)
{
    sampler_drain_stop(s);
    int rc = 0;
    /* A recording that ran keeps what it holds under its name, however it ends. */
    struct hv_err oerr = {0};
    if (hv_output_commit(&s->out, &oerr) < 0 && !atomic_load(&s->write_failed)) {
        s->write_err = oerr;
        atomic_store(&s->write_failed, true);
    }
    /* The vCPU threads have stopped: take everything left, with pending loss records. */
    if (sampler_drain_once(s, true) < 0)
        rc = -1;
    if (atomic_load(&s->write_failed)) {
        /* Nothing more reaches the file; count what is lost so the summary says so. */
        for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
            uint32_t n;
            while (fxt_ring_peek(&s->core.v[i].ring, &n)) {
                fxt_ring_release(&s->core.v[i].ring, n);
                s->lost++;
            }
        }
        s->lost += s->w.records_lost;
    }
    /* A stop the guest made is a flight recorder's trigger: its snapshot beside the others
     * (the file, below, holds the same records). */
    if (rc == 0 && s->flight_on && s->guest_stop)
        sampler_flight_snapshot(s, s->guest_stop);
    if (rc == 0 && s->flight_on && sampler_flight_finish(s, &s->write_err) < 0) {
        atomic_store(&s->write_failed, true);
        rc = -1;
    }
    if (rc == 0 && sampler_write_stop_marker(s, &s->w,
                                             !s->flight_on   ? NULL
                                             : s->guest_stop ? s->guest_stop
                                                             : "stop",
                                             &s->write_err) < 0) {
        atomic_store(&s->write_failed, true);
        rc = -1;
    }
    if (s->writer_open) {
        struct hv_err cerr = {0};
        if (fxt_writer_close(&s->w, &cerr) < 0 && rc == 0) {
            s->write_err = cerr;
            atomic_store(&s->write_failed, true);
            rc = -1;
        }
        s->writer_open = false;
    }
    s->state = SAMPLER_FINISHED;
    if (rc < 0 && err)
        *err = s->write_err;
    return rc;
}

void sampler_get_totals(const struct sampler *s, struct sampler_totals *t)
{
    memset(t, 0, sizeof(*t));
    uint64_t ns = 0, n = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        const struct vcpu_stats *st = &s->core.v[i].st;
        t->user += st->user;
        t->kernel += st->kernel;
        t->idle += st->idle;
        t->missed += st->missed;
        t->completed += st->completed;
        t->abandoned += st->abandoned;
        t->rechecks += st->rechecks;
        t->exits += st->exits;
        t->records += st->records;
        t->user_entry += st->user_entry;
        t->user_at_entry += st->user_at_entry;
        t->dropped += fxt_ring_dropped_total(&s->core.v[i].ring);
        ns += st->t_total;
        n += st->t_samples;
    }
    t->dropped += s->lost;
    t->mean_exit_ns = n ? (double)ns / (double)n : 0;
}

/* What the file lacks: the lines --quiet keeps. */
static void print_losses(const struct sampler *s, const struct sampler_totals *t,
                         const char *prefix, FILE *out)
{
    if (s->lost)
        fprintf(out,
                "%sWARNING: %" PRIu64 " records could not be written (the file ends at the last "
                "complete record before the write failure)\n",
                prefix, s->lost);
    if (t->dropped > s->lost)
        fprintf(out,
                "%sWARNING: %" PRIu64 " records were dropped (ring full); the trace says "
                "where (records_dropped events). A larger --buffer avoids it.\n",
                prefix, t->dropped - s->lost);
}

/* What the flight recorder kept, let go and wrote. */
static void sampler_print_flight(const struct sampler *s, FILE *out)
{
    const struct sampler_flight *f = s->flight;
    uint64_t over = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++)
        over += f->over[i].dropped;
    /* In MiB, the unit --ring's sizes are given in (4M is 4 MiB). */
    fprintf(out, "  flight recorder: %s kept %" PRIu64 " records (%.1f of %.1f MiB)",
            s->cfg.out_path, f->buf.records, (double)fxt_flight_bytes(&f->buf) / 1048576.0,
            (double)s->cfg.ring_bytes / 1048576.0);
    if (over)
        fprintf(out, ", %" PRIu64 " older ones overwritten", over);
    if (s->cfg.ring_window_ns)
        fprintf(out, "; window %.1f s", (double)s->cfg.ring_window_ns / 1e9);
    fprintf(out, "\n");
    if (f->snapshots || f->snapshot_failures)
        fprintf(out,
                "  snapshots: %" PRIu64 " written (slowest %.0f ms), %" PRIu64 " failed, %" PRIu64
                " removed to keep the newest %u; the last: %s\n",
                f->snapshots, (double)f->max_ns / 1e6, f->snapshot_failures, f->removed,
                s->cfg.ring_keep, f->snapshots ? f->last_path : "none");
}

/* Steal time per vCPU: its thread runnable but not running on the host (its run-queue wait,
 * /proc/thread-self/schedstat at its start and stop): the guest's vCPU could have run and did
 * not, which no tool inside the guest sees as more than a counter. */
static void print_steal(const struct sampler *s, FILE *out)
{
    uint64_t steal = 0, wall = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        const struct vcpu_stats *st = &s->core.v[i].st;
        if (!st->steal_known)
            return; /* a kernel without schedstat: nothing said rather than half */
        steal += st->steal_ns;
        wall += st->wall_ns;
    }
    if (!wall)
        return;
    fprintf(out, "  steal: the vCPU threads waited for a host CPU %.1f ms of %.1f ms (%.1f%%):",
            (double)steal / 1e6, (double)wall / 1e6, 100.0 * (double)steal / (double)wall);
    /* Of many vCPUs, the one that waited most alone. */
    unsigned worst = 0;
    for (unsigned i = 1; i < s->cfg.nvcpus; i++)
        worst = s->core.v[i].st.steal_ns > s->core.v[worst].st.steal_ns ? i : worst;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        const struct vcpu_stats *st = &s->core.v[i].st;
        if (s->cfg.nvcpus > SAMPLER_SUMMARY_VCPUS && i != worst)
            continue;
        if (s->cfg.nvcpus > SAMPLER_SUMMARY_VCPUS)
            fprintf(out, " the most, vcpu%u %.1f ms (%.1f%%)", i, (double)st->steal_ns / 1e6,
                    st->wall_ns ? 100.0 * (double)st->steal_ns / (double)st->wall_ns : 0.0);
        if (s->cfg.nvcpus > SAMPLER_SUMMARY_VCPUS)
            continue;
        fprintf(out, "%s vcpu%u %.1f ms (%.1f%%)", i ? "," : "", i, (double)st->steal_ns / 1e6,
                st->wall_ns ? 100.0 * (double)st->steal_ns / (double)st->wall_ns : 0.0);
    }
    fputc('\n', out);
}

static uint64_t vcpu_samples(const struct sampler *s, unsigned i)
{
    const struct vcpu_stats *st = &s->core.v[i].st;
    return st->user + st->kernel + st->idle;
}

/* Which vCPUs' rows a summary prints: all of a few dozen; of more, the four busiest and the
 * four idlest (a 1000-vCPU guest's summary stays a screen). */
static bool vcpu_row_shown(const struct sampler *s, unsigned i, bool every_vcpu)
{
    unsigned n = s->cfg.nvcpus;
    if (every_vcpu || n <= SAMPLER_SUMMARY_VCPUS)
        return true;
    unsigned more = 0, less = 0;
    uint64_t mine = vcpu_samples(s, i);
    for (unsigned j = 0; j < n; j++) {
        uint64_t other = vcpu_samples(s, j);
        more += other > mine || (other == mine && j < i);
        less += other < mine || (other == mine && j > i);
    }
    return more < 4 || less < 4;
}

void sampler_print_brief(const struct sampler *s, FILE *out)
{
    struct sampler_totals t;
    sampler_get_totals(s, &t);
    uint64_t samples = t.user + t.kernel + t.idle;
    double secs = (double)(hv_now_ns() - s->start_ns) / 1e9;
    fprintf(out,
            "hvprof record: %" PRIu64 " sample%s of %u vCPU%s at %" PRIu64
            " Hz (%s mode) in %.1f s; %" PRIu64 " tick%s missed, %" PRIu64 " record%s dropped\n",
            samples, samples == 1 ? "" : "s", s->cfg.nvcpus, s->cfg.nvcpus == 1 ? "" : "s",
            s->cfg.hz, mode_name(s->cfg.mode), secs, t.missed, t.missed == 1 ? "" : "s", t.dropped,
            t.dropped == 1 ? "" : "s");
    if (t.missed > samples / 4 && t.missed > 100)
        fprintf(out,
                "hvprof record: advice: %" PRIu64 " ticks missed against %" PRIu64
                " taken: the vCPU threads did not get a host CPU in time; lower --hz or "
                "--vcpus (-v for the per-vCPU account)\n",
                t.missed, samples);
}

void sampler_print_summary(const struct sampler *s, FILE *out, bool every_vcpu)
{
    fprintf(out, "hvprof record: %s, %" PRIu64 " Hz, %s mode, %u vCPU%s\n", s->cfg.out_path,
            s->cfg.hz, mode_name(s->cfg.mode), s->cfg.nvcpus, s->cfg.nvcpus == 1 ? "" : "s");
    fprintf(out, "  %-6s %9s %9s %9s %9s %9s %9s %9s %10s\n", "vcpu", "user", "kernel", "idle",
            "missed", "complete", "abandon", "dropped", "us/sample");
    unsigned folded = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        const struct vcpu_stats *st = &s->core.v[i].st;
        if (!vcpu_row_shown(s, i, every_vcpu)) {
            if (!folded++)
                fprintf(out, "  ...    (the vCPUs between the busiest and the idlest: -vv lists "
                             "each)\n");
            continue;
        }
        double us = st->t_samples ? (double)st->t_total / (double)st->t_samples / 1000.0 : 0;
        fprintf(out,
                "  vcpu%-2u %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
                " %9" PRIu64 " %9" PRIu64 " %10.2f\n",
                i, st->user, st->kernel, st->idle, st->missed, st->completed, st->abandoned,
                fxt_ring_dropped_total(&s->core.v[i].ring), us);
    }
    struct sampler_totals t;
    sampler_get_totals(s, &t);
    fprintf(out,
            "  total  %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
            " %9" PRIu64 " %10.2f\n",
            t.user, t.kernel, t.idle, t.missed, t.completed, t.abandoned, t.dropped,
            t.mean_exit_ns / 1000.0);
    fprintf(out,
            "  %" PRIu64 " timer exits, %" PRIu64 " re-check exits, %" PRIu64
            " records in the file%s; guest identities: %" PRIu64 " table-full lookups",
            t.exits, t.rechecks, s->w.records_written - s->w.records_lost,
            s->w.records_lost ? " (those the disk took before the write error)" : "",
            (uint64_t)atomic_load(&s->core.ids->full));
    uint64_t unattributed = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++)
        unattributed += s->core.v[i].st.unattributed;
    if (unattributed)
        fprintf(out,
                ", %" PRIu64 " stops under the identity " HVFXT_UNATTRIBUTED_NAME
                " (more live processes or threads than the tables' %u and %u slots)",
                unattributed, ID_MAX_PROCS, ID_MAX_THREADS);
    fputc('\n', out);
    sampler_reclaim_summary(s->reclaim, out);
    uint64_t tmax = 0, hook_ns = 0, cpu_ns = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        tmax = s->core.v[i].st.t_max > tmax ? s->core.v[i].st.t_max : tmax;
        hook_ns += s->core.v[i].st.t_total;
        cpu_ns += s->core.v[i].st.cpu_ns;
    }
    /* Wall time around the hook: the max includes any host preemption of the vCPU thread in
     * the middle of it (a CPU-time clock would cost a system call per exit here). What it does
     * not include is the exit itself: leaving the guest and entering it again, which is the
     * machine's floor (--mode exits measures it; BENCHMARKS.md compares the two). */
    fprintf(out,
            "  exit path: mean %.2f us, max %.2f us per sample of hvprof's own work at the exit "
            "(registers, identity, stack walks, ring write; wall time)",
            t.mean_exit_ns / 1000.0, (double)tmax / 1000.0);
    if (cpu_ns)
        fprintf(out, ", %.1f%% of the vCPU threads' CPU time",
                100.0 * (double)hook_ns / (double)cpu_ns);
    fprintf(out, "; the guest exit and re-entry themselves are not counted (--mode exits "
                 "measures them)\n");
    print_steal(s, out);
    if (s->flight_on)
        sampler_print_flight(s, out);
    /* Numbers that mean the profile is less than it could be, with what to do about them. */
    uint64_t samples = t.user + t.kernel + t.idle;
    if (t.missed > samples / 4 && t.missed > 100)
        fprintf(out,
                "  advice: %" PRIu64 " ticks were missed against %" PRIu64
                " taken: the vCPU threads did not get a host CPU when their timer fired (an "
                "overloaded host, or more vCPUs than host cores); lower --hz or the vCPUs, or "
                "free the host's CPUs\n",
                t.missed, samples);
    if (cpu_ns && (double)hook_ns > 0.10 * (double)cpu_ns)
        fprintf(out,
                "  advice: hvprof's work at the exits took %.0f%% of the vCPU threads' CPU time: "
                "the guest ran that much slower; lower --hz or --max-depth\n",
                100.0 * (double)hook_ns / (double)cpu_ns);
    uint64_t meta = meta_budget_used(&s->meta);
    fprintf(out,
            "  metadata (modules, mappings, symbols, names): %.1f MiB of %.0f MiB (--max-metadata)",
            (double)meta / (1 << 20), (double)s->meta.max / (1 << 20));
    if (s->meta.cut_symbol_tables || s->meta.cut_records)
        fprintf(out,
                "; over it, %" PRIu64 " symbol tables cut short or not read and %" PRIu64
                " module, mapping or name records left out: the guest claims far more about "
                "itself than a real system does, or raise --max-metadata",
                s->meta.cut_symbol_tables, s->meta.cut_records);
    fputc('\n', out);
    sampler_sources_summary(s, out);
    module_files_summary(&s->env, out);
    if (s->host_virtualized)
        fprintf(out, "  note: this host is itself a virtual machine (CPUID hypervisor bit): every "
                     "time above was measured inside a virtual machine, not on the hardware\n");
    if (t.abandoned) {
        uint64_t to = 0, end = 0, full = 0;
        for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
            to += s->core.v[i].st.abandoned_timeout;
            end += s->core.v[i].st.abandoned_end;
            full += s->core.v[i].st.abandoned_full;
        }
        fprintf(out,
                "  abandoned continuations: %" PRIu64 " timed out (%" PRIu64 " ticks), %" PRIu64
                " at the end of the session, %" PRIu64 " over the per-vCPU limit\n",
                to, s->core.v[0].abandon_ticks, end, full);
    }
    print_losses(s, &t, "  ", out);
}

void sampler_print_warnings(const struct sampler *s, FILE *out)
{
    struct sampler_totals t;
    sampler_get_totals(s, &t);
    if (s->meta.cut_symbol_tables || s->meta.cut_records)
        fprintf(out,
                "hvprof record: WARNING: over --max-metadata, %" PRIu64
                " symbol tables cut short or not read and %" PRIu64
                " module, mapping or name records left out\n",
                s->meta.cut_symbol_tables, s->meta.cut_records);
    print_losses(s, &t, "hvprof record: ", out);
}

static double per(uint64_t total, uint64_t n)
{
    return n ? (double)total / (double)n : 0.0;
}

void sampler_print_stage_times(const struct sampler *s, FILE *out)
{
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        const struct vcpu_stats *st = &s->core.v[i].st;
        fprintf(out,
                "stage-times vcpu=%u samples=%" PRIu64 " user=%" PRIu64 " kernel=%" PRIu64
                " idle=%" PRIu64 " missed=%" PRIu64 " dropped=%" PRIu64 " exits=%" PRIu64
                " rechecks=%" PRIu64 " walk_fail=%" PRIu64 " regs_ns=%.1f walk_ns=%.1f"
                " push_ns=%.1f total_ns=%.1f max_ns=%" PRIu64 "\n",
                i, st->t_samples, st->user, st->kernel, st->idle, st->missed,
                fxt_ring_dropped_total(&s->core.v[i].ring), st->exits, st->rechecks, st->walk_fail,
                per(st->t_regs, st->t_samples), per(st->t_walk, st->t_samples),
                per(st->t_push, st->t_samples), per(st->t_total, st->t_samples), st->t_max);
    }
}

void sampler_destroy(struct sampler *s)
{
    if (!s)
        return;
    sampler_drain_stop(s);
    if (s->writer_open) {
        fxt_writer_close(&s->w, NULL);
        s->writer_open = false;
    }
    hv_output_discard(&s->out); /* NAME.part of a recording that never began */
    hv_output_close(&s->out);
    if (s->core.v) {
        for (unsigned i = 0; i < s->cfg.nvcpus; i++)
            fxt_ring_destroy(&s->core.v[i].ring);
    }
    /* What the sources retired goes first: it may point into their state. */
    sampler_reclaim_destroy(s->reclaim);
    sampler_sources_destroy(s);
    free(s->core.v);
    free(s->core.ids);
    free(s->proc_named);
    free(s->thread_named);
    free(s->proc_seq);
    free(s->thread_seq);
    free(s->looked);
    discover_registry_free(&s->modules);
    module_files_free(&s->files);
    sampler_flight_destroy(s);
    guestos_close(&s->os);
    free(s);
}
