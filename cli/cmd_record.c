/* hvprof record: boot a guest under sampling and write an FXT recording. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/parse.h"
#include "cli/record.h"
#include "cli/disk_boot.h"
#include "cli/disk_notes.h"
#include "cli/run_opts.h"
#include "cli/run_sandbox.h"
#include "common/elf_header.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/sampler.h"
#include "symbolize/symbol_path.h"

enum {
    OPT_HZ = 0x2000,
    OPT_MODE,
    OPT_MAX_DEPTH,
    OPT_DURATION,
    OPT_BUFFER,
    OPT_RECHECK,
    OPT_ABANDON,
    OPT_NO_LEAF,
    OPT_DEFER_USER,
    OPT_STAGE_TIMES,
    OPT_GUEST_OS,
    OPT_SYMBOLS,
    OPT_MAX_METADATA,
    OPT_RING,
    OPT_RING_KEEP,
    OPT_EVENTS,
    OPT_EXIT_EVERY,
    OPT_OFF_CPU,
    OPT_NO_PYTHON,
    OPT_OFF_CPU_HZ,
};

#define OFF_CPU_HZ_DEFAULT 50u  /* visits a second: a sleep's stack within 20 ms */
#define OFF_CPU_HZ_MAX     100u /* the drain thread's pass is every 10 ms */

#define RING_KEEP_DEFAULT 10u
#define RING_SIZE_DEFAULT (64ull << 20) /* with --ring TIME */
#define RING_VCPU_BUFFER  (256u << 10)  /* per-vCPU ring under --ring, unless --buffer */

/* Only an ELF64 kernel carries its own symbols into the trace (a bzImage's are in vmlinux). */
static bool rs_kernel_is_elf(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    unsigned char m[EI_NIDENT] = {0};
    size_t n = fread(m, 1, sizeof(m), f);
    fclose(f);
    return hv_elf_is_elf64(m, n);
}

/* The help's numbers are the code's (checked here at build time). */
_Static_assert(SAMPLER_DEFAULT_HZ == 1000u, "--hz's help says 1000");
_Static_assert(SAMPLER_DEFAULT_ABANDON == 10u, "--abandon-periods' help says 10");
_Static_assert(RING_KEEP_DEFAULT == 10u, "--ring-keep's help says 10");
_Static_assert(OFF_CPU_HZ_DEFAULT == 50u && OFF_CPU_HZ_MAX == 100u,
               "--off-cpu-hz's help says 50, at most 100");

static const struct cli_option record_options[] = {
    {'o', "output", 'o', "FILE", "the recording (FXT) to write (required)"},
    {OPT_HZ, "hz", 0, "N", "samples per second per vCPU, e.g. 1000, 4kHz (default 1000)"},
    {'F', "freq", 'F', "N", "the same as --hz (perf's -F)"},
    {'c', "period", 'c', "NS",
     "a sample every NS nanoseconds of each vCPU (perf's -c for\n"
     "cpu-clock): --hz 1e9/NS"},
    {'a', "all-cpus", 'a', NULL, "every vCPU (always so: perf's -a, accepted)"},
    {'g', "call-graph", 'g', NULL, "stacks (always recorded: perf's -g, accepted)"},
    {'p', "pid", 'p', "PID",
     "refused: hvprof records a guest it boots, not a process\n"
     "already running (profile a process of the guest with report\n"
     "--pid)"},
    {OPT_MODE, "mode", 0, "cpu|wall|exits",
     "cpu: skip ticks where the vCPU is halted (default);\n"
     "wall: sample every tick; exits: take the timer exits but\n"
     "record nothing (measures the machine's exit floor)"},
    {OPT_MAX_DEPTH, "max-depth", 0, "N", "frames per stack, user and kernel each (default 128)"},
    {OPT_DURATION, "duration", 0, "S", "stop after S (e.g. 10, 1.5s, 500ms); exit status 0"},
    {OPT_BUFFER, "buffer", 0, "SIZE",
     "ring per vCPU, e.g. 64K, 4M (default 1M); a full ring\n"
     "drops records and the trace counts them"},
    {OPT_RECHECK, "recheck", 0, "T",
     "re-check period while a kernel-mode sample waits for the\n"
     "return to user mode (default 200us; 0 = only at ticks)"},
    {OPT_ABANDON, "abandon-periods", 0, "N",
     "abandon a continuation after N ticks of its vCPU (default 10,\n"
     "and never before 10 ms)"},
    {OPT_NO_LEAF, "no-leaf-repair", 0, NULL, "do not decode the code at the sampled PC"},
    {OPT_DEFER_USER, "defer-user-stacks", 0, NULL,
     "kernel-mode samples always take the user stack at the\n"
     "thread's next user-mode exit, even where the kernel walk\n"
     "found the user registers it entered the kernel with\n"
     "(Linux ORC; by default that stack is walked at once)"},
    {OPT_GUEST_OS, "guest-os", 0, "auto|linux|generic",
     "what the guest's memory is read as: linux finds the\n"
     "kernel's VMCOREINFO and symbols (kallsyms) in it and puts\n"
     "them into the recording; auto (default) is linux for a\n"
     "bzImage kernel, generic for an ELF64 one"},
    {OPT_SYMBOLS, "symbols", 0, "DIR",
     "the guest's binaries on this host, found by build-id\n"
     "(DIR/.build-id/xx/rest[.debug] or any file in DIR;\n"
     "repeatable): their unwind tables (DWARF CFI) where the\n"
     "guest's memory does not show them whole (docs/cfi.md);\n"
     "'hvprof report' then looks in the first DIR too"},
    {OPT_MAX_METADATA, "max-metadata", 0, "SIZE",
     "bytes the recording may spend on what the guest says about\n"
     "itself: modules, mappings, symbols, names (default 64M);\n"
     "what does not fit is left out and counted"},
    {OPT_RING, "ring", 0, "SIZE|TIME[,SIZE]",
     "flight recorder: keep only the newest samples, SIZE bytes\n"
     "(e.g. 64M) or the last TIME (e.g. 30s, 5min; at most SIZE,\n"
     "default 64M); FILE gets them at the end; SIGUSR2, a guest\n"
     "kernel panic or a guest reset or triple fault writes a\n"
     "snapshot beside FILE (rec.fxt: rec.<UTC time>Z.fxt)"},
    {OPT_RING_KEEP, "ring-keep", 0, "N", "snapshots kept, the newest (default 10)"},
    {OPT_EVENTS, "events", 0, "exits",
     "also record every VM exit hvprof handles (port I/O, MMIO,\n"
     "HLT) with its device, register, host time and the guest's\n"
     "stacks that caused it; 'hvprof report --exits' shows them\n"
     "(docs/exits.md)"},
    {OPT_EXIT_EVERY, "exit-stacks-every", 0, "N",
     "with --events exits: the stacks of every Nth exit of a vCPU\n"
     "only (1: all); by default as many as cost at most 5% of\n"
     "the vCPU's time; every exit is still counted and timed"},
    {OPT_OFF_CPU, "off-cpu", 0, NULL,
     "also record the time every guest thread spends off its CPU\n"
     "(sleeping, waiting for I/O, runnable), with its kernel and\n"
     "user stacks, read from the guest kernel's memory (Linux);\n"
     "'hvprof report --off-cpu' or '--wall' shows it\n"
     "(docs/off-cpu.md)"},
    {OPT_OFF_CPU_HZ, "off-cpu-hz", 0, "N",
     "with --off-cpu: visits of the threads a second (default 50,\n"
     "at most 100)"},
    {OPT_NO_PYTHON, "no-python", 0, NULL,
     "no Python frames: by default the frames of a CPython\n"
     "3.11 or 3.13 program (function, file, line) are read from\n"
     "the interpreter's memory at each sample (docs/python.md)"},
    {'q', "quiet", 'q', NULL,
     "no progress line, no summary: errors and what the file\n"
     "lacks only"},
    {'v', "verbose", 'v', NULL,
     "the whole account at the end (per vCPU, the exit path, steal,\n"
     "modules, sources), as a file or pipe gets it; -vv every vCPU's\n"
     "row however many"},
    {OPT_STAGE_TIMES, "stage-times", 0, NULL,
     "print the exit hook's mean time per stage, per vCPU"},
};

static const struct cli_group sampling_group = CLI_GROUP("sampling options", record_options);
static const struct cli_group *const record_groups[] = {&sampling_group, &run_opts_group};

const struct cli_command cli_record = {
    .name = "record",
    .synopsis = "-o FILE [options] [--guest demo | --kernel FILE ...]",
    .about = "Boot a guest and sample it from the hypervisor: a CLOCK_MONOTONIC timer per vCPU\n"
             "forces an exit; kernel-mode samples are completed with the user stack when the\n"
             "guest thread is back in user mode (RFC-0274 continuations). Writes FXT; read it\n"
             "with 'hvprof report FILE' or 'hvprof dump FILE'. Stops at the guest's exit, after\n"
             "--duration, or on Ctrl-C (exit status 0); the file is complete in every case.",
    .examples =
        "hvprof record --guest demo -o demo.fxt                # the built-in demo guest\n"
        "hvprof record --disk debian.qcow2 --vcpus 2 -F 999 -o d.fxt --duration 30\n"
        "hvprof record --libvirt web01 --off-cpu -o web.fxt    # a libvirt domain, off-CPU too",
    .groups = record_groups,
    .ngroups = sizeof(record_groups) / sizeof(record_groups[0]),
};

struct record_extra {
    uint64_t duration_ns;
    unsigned verbose; /* -v: the whole summary on a terminal too; -vv: every vCPU's row */
    bool exit_every_given, ring_keep_given;
    bool buffer_given;
    bool off_cpu;        /* --off-cpu */
    uint64_t off_cpu_hz; /* --off-cpu-hz, 0: not given */
    bool stage_times;
    const char *guest_os;       /* NULL = auto */
    struct symbol_path symbols; /* --symbols */
    char first_symbols[PATH_MAX];
};

/* sampler_config.find_file: a guest binary's file by build-id among the --symbols dirs. */
static char *find_guest_file(void *ctx, const uint8_t *build_id, uint32_t len, const char *name)
{
    return symbol_path_find(ctx, build_id, len, name);
}

/* Whether a part of --ring is a duration: it ends in a time unit (s, ms, us, ns, min, h). A
 * size never does ("2m" is two mebibytes, as for --buffer). */
static bool is_duration(const char *p, size_t len)
{
    return len > 0 &&
           (p[len - 1] == 's' || p[len - 1] == 'h' || (len > 3 && !strncmp(p + len - 3, "min", 3)));
}

/* --ring SIZE | TIME | TIME,SIZE */
static int parse_ring(const char *arg, struct sampler_config *c, struct hv_err *err)
{
    char buf[64];
    if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
        return hv_errk(err, HV_ERR_USAGE, "--ring: '%s' is too long", arg);
    c->ring_bytes = 0;
    c->ring_window_ns = 0;
    char *save = NULL;
    unsigned parts = 0;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save), parts++) {
        uint64_t v;
        if (*p < '0' || *p > '9')
            return hv_errf(
                err, "--ring: '%s' is neither a size (64M, 1G) nor a time (30s, 5min, 1h)", p);
        if (is_duration(p, strlen(p))) {
            if (c->ring_window_ns)
                return hv_errf(err, "--ring: two durations in '%s'", arg);
            if (parse_duration_ns(p, "--ring", 100000000ull, 7ull * 24 * 3600 * 1000000000ull, &v,
                                  err) < 0)
                return -1;
            c->ring_window_ns = v;
        } else {
            if (c->ring_bytes)
                return hv_errf(err, "--ring: two sizes in '%s'", arg);
            if (parse_size(p, "--ring", 1u << 20, 1ull << 40, &v, err) < 0)
                return -1;
            c->ring_bytes = v;
        }
    }
    if (parts == 0 || parts > 2)
        return hv_errf(err, "--ring: '%s' is not SIZE, TIME or TIME,SIZE (e.g. 64M, 30s, 30s,256M)",
                       arg);
    if (!c->ring_bytes)
        c->ring_bytes = RING_SIZE_DEFAULT;
    return 1;
}

static int handle_record_opt(struct sampler_config *c, int opt, const char *arg,
                             struct record_extra *x, struct hv_err *err)
{
    uint64_t v;
    switch (opt) {
    case 'o':
        c->out_path = arg;
        return 1;
    case OPT_HZ:
    case 'F':
        if (parse_freq_hz(arg, opt == OPT_HZ ? "--hz" : "-F", 1, 100000, &v, err) < 0)
            return -1;
        c->hz = v;
        return 1;
    case 'c':
        /* perf's cpu-clock period is in nanoseconds: -c 1000000 is 1 kHz. */
        if (parse_uint(arg, "-c", 10000, 1000000000, &v, err) < 0)
            return -1;
        if (1000000000ull % v)
            return hv_errk(err, HV_ERR_USAGE,
                           "-c %s: the period must divide a second (1000000 is 1 kHz)", arg);
        c->hz = 1000000000ull / v;
        return 1;
    case 'a':
    case 'g':
        return 1;
    case 'p':
        return hv_errk(err, HV_ERR_USAGE,
                       "-p %s: hvprof records a guest it boots (--guest, --kernel, --disk, "
                       "--libvirt), not a running process; record the VM, then 'hvprof report "
                       "FILE --pid %s' shows the guest's process",
                       arg, arg);
    case 'v':
        x->verbose++;
        return 1;
    case OPT_MODE:
        if (!strcmp(arg, "cpu"))
            c->mode = SAMPLER_MODE_CPU;
        else if (!strcmp(arg, "wall"))
            c->mode = SAMPLER_MODE_WALL;
        else if (!strcmp(arg, "exits"))
            c->mode = SAMPLER_MODE_EXITS;
        else
            return hv_errf(err, "--mode: '%s' is not one of cpu, wall, exits", arg);
        return 1;
    case OPT_MAX_DEPTH:
        if (parse_uint(arg, "--max-depth", 1, 1000, &v, err) < 0)
            return -1;
        c->max_depth = (unsigned)v;
        return 1;
    case OPT_DURATION:
        if (parse_duration_ns(arg, "--duration", 1000000, 7ull * 24 * 3600 * 1000000000ull,
                              &x->duration_ns, err) < 0)
            return -1;
        return 1;
    case OPT_BUFFER:
        if (parse_size(arg, "--buffer", 32 << 10, 1ull << 32, &v, err) < 0)
            return -1;
        c->buffer_bytes = v;
        x->buffer_given = true;
        return 1;
    case OPT_RING:
        return parse_ring(arg, c, err);
    case OPT_EVENTS:
        if (strcmp(arg, "exits"))
            return hv_errf(err, "--events: '%s' is not one of: exits", arg);
        c->exit_events = true;
        return 1;
    case OPT_EXIT_EVERY:
        if (parse_uint(arg, "--exit-stacks-every", 1, 1000000, &v, err) < 0)
            return -1;
        c->exit_every = (unsigned)v;
        x->exit_every_given = true;
        return 1;
    case OPT_OFF_CPU:
        x->off_cpu = true;
        return 1;
    case OPT_NO_PYTHON:
        c->no_python = true;
        return 1;
    case OPT_OFF_CPU_HZ:
        if (parse_uint(arg, "--off-cpu-hz", 1, OFF_CPU_HZ_MAX, &v, err) < 0)
            return -1;
        x->off_cpu_hz = v;
        return 1;
    case OPT_RING_KEEP:
        if (parse_uint(arg, "--ring-keep", 1, 100000, &v, err) < 0)
            return -1;
        c->ring_keep = (unsigned)v;
        x->ring_keep_given = true;
        return 1;
    case OPT_MAX_METADATA:
        if (parse_size(arg, "--max-metadata", META_BUDGET_MIN, 1ull << 40, &v, err) < 0)
            return -1;
        c->max_metadata = v;
        return 1;
    case OPT_RECHECK:
        if (!strcmp(arg, "0")) {
            c->recheck_ns = 0;
            return 1;
        }
        if (parse_duration_ns(arg, "--recheck", 10000, 1000000000ull, &v, err) < 0)
            return -1;
        c->recheck_ns = v;
        return 1;
    case OPT_ABANDON:
        if (parse_uint(arg, "--abandon-periods", 1, 1000000, &v, err) < 0)
            return -1;
        c->abandon_periods = (unsigned)v;
        return 1;
    case OPT_NO_LEAF:
        c->no_leaf_repair = true;
        return 1;
    case OPT_DEFER_USER:
        c->defer_user_stacks = true;
        return 1;
    case 'q':
        c->quiet = true;
        return 1;
    case OPT_STAGE_TIMES:
        x->stage_times = true;
        return 1;
    case OPT_SYMBOLS:
        if (symbol_path_add_dir(&x->symbols, arg, err) < 0)
            return -1;
        if (!x->first_symbols[0] && !realpath(arg, x->first_symbols))
            return hv_errf_errno(err, "--symbols %s", arg);
        return 1;
    case OPT_GUEST_OS:
        if (!strcmp(arg, "auto"))
            x->guest_os = NULL;
        else if (!strcmp(arg, "linux") || !strcmp(arg, "generic"))
            x->guest_os = arg;
        else
            return hv_errf(err, "--guest-os: '%s' is not one of auto, linux, generic", arg);
        return 1;
    }
    return 0;
}

/* cli_parse's handler: the sampling options, then the guest's. */
struct record_parse {
    struct sampler_config *c;
    struct record_extra *x;
    struct run_opts *o;
};

static int handle(void *ctx, int id, const char *arg, struct hv_err *err)
{
    struct record_parse *rp = ctx;
    int r = handle_record_opt(rp->c, id, arg, rp->x, err);
    return r ? r : run_opts_handle(rp->o, id, arg, err);
}

/* The signal handler's only way to the sampler (conventions: globals only for handlers). */
static struct sampler *volatile snapshot_sampler;

static void on_snapshot_signal(int sig)
{
    (void)sig;
    sampler_request_snapshot(snapshot_sampler);
}

/* SIGUSR2 asks for a snapshot (perf record --switch-output=signal's signal). */
static void catch_snapshot_signal(struct sampler *s)
{
    snapshot_sampler = s;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_snapshot_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
}

int cmd_record(int argc, char **argv)
{
    return record_main(argc, argv, NULL);
}

int record_main(int argc, char **argv, const struct record_hooks *tool)
{
    run_signals_install(); /* first: a signal at any moment of start-up is handled */
    /* Static, like the recording's extras: what run_opts_finish read (a disk's kernel and
     * initrd) stays reachable until the process ends, whichever way the command returns. */
    static struct run_opts o;
    run_opts_init(&o);
    o.prog = "hvprof record";
    struct sampler_config c = {
        .hz = SAMPLER_DEFAULT_HZ,
        .mode = SAMPLER_MODE_CPU,
        .max_depth = 128,
        .buffer_bytes = SAMPLER_DEFAULT_BUFFER,
        .recheck_ns = SAMPLER_DEFAULT_RECHECK_NS,
        .abandon_periods = SAMPLER_DEFAULT_ABANDON,
        .ring_keep = RING_KEEP_DEFAULT,
    };
    static struct record_extra x;
    x = (struct record_extra){0};
    symbol_path_init(&x.symbols);
    struct hv_err err = {0};
    struct record_parse rp = {&c, &x, &o};
    int parsed = cli_parse(&cli_record, argc, argv, handle, &rp);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    if (optind < argc) {
        fprintf(stderr, "hvprof record: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!c.out_path) {
        fprintf(stderr, "hvprof record: no output file (use -o FILE)\n");
        return 2;
    }
    /* The guest's console and the progress line on one terminal would run into each other:
     * there, the console goes to FILE.console unless --console says where (- for the
     * terminal, the progress line then off), said once. */
    static char console_path[PATH_MAX + 16];
    bool console_default = false;
    bool on_terminal = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
    if (o.console && !strcmp(o.console, "-")) {
        o.console = NULL;
        c.no_progress = on_terminal;
    } else if (!o.console && on_terminal && !c.quiet) {
        snprintf(console_path, sizeof(console_path), "%s.console", c.out_path);
        o.console = console_path;
        console_default = true;
    }
    if (run_opts_finish(&o, &err) < 0 || run_opts_check_outputs(&o, c.out_path, &err) < 0) {
        fprintf(stderr, "hvprof record: %s\n", err.msg);
        return o.disk_failed ? 1 : 2; /* a disk's file, or the command line */
    }
    if (x.off_cpu_hz && !x.off_cpu) {
        fprintf(stderr, "hvprof record: --off-cpu-hz needs --off-cpu\n");
        return 2;
    }
    /* Options that mean nothing without another: said before anything starts. */
    if (x.exit_every_given && !c.exit_events) {
        fprintf(stderr, "hvprof record: --exit-stacks-every needs --events exits\n");
        return 2;
    }
    if (x.ring_keep_given && !c.ring_bytes && !c.ring_window_ns) {
        fprintf(stderr, "hvprof record: --ring-keep needs --ring (the flight recorder)\n");
        return 2;
    }
    if (x.off_cpu)
        c.off_cpu_hz = x.off_cpu_hz ? x.off_cpu_hz : OFF_CPU_HZ_DEFAULT;
    if (c.off_cpu_hz && c.ring_bytes) {
        fprintf(stderr, "hvprof record: --off-cpu cannot be used with --ring (a flight recording "
                        "keeps samples only)\n");
        return 2;
    }
    /* The flight recorder bounds its memory: the vCPU rings only bridge one drain pass. */
    if (c.ring_bytes && !x.buffer_given)
        c.buffer_bytes = RING_VCPU_BUFFER;
    bool by_duration = x.duration_ns && (o.timeout_s == 0 || o.timeout_s * 1e9 > x.duration_ns);
    if (by_duration)
        o.timeout_s = (double)x.duration_ns / 1e9;
    c.nvcpus = o.vcpus;
    c.force_output = o.force;
    c.guest_desc = o.disk_boot ? o.disk_boot->desc : o.kernel;
    c.kernel_elf = o.kernel && rs_kernel_is_elf(o.kernel) ? o.kernel : NULL;
    bool elf_kernel = c.kernel_elf || (o.disk_boot && hv_elf_is_elf64(o.disk_boot->b.kernel,
                                                                      o.disk_boot->b.kernel_size));
    c.guest_os = x.guest_os ? x.guest_os : elf_kernel ? "generic" : "linux";
    /* The built-in guest keeps its programs' ELF files next to the kernel (progs/): tell
     * `hvprof report` where they are, so a demo recording symbolizes without --symbols. */
    char symdir[PATH_MAX + 8];
    if (o.guest && realpath(o.kernel, symdir)) {
        char *slash = strrchr(symdir, '/');
        if (slash) {
            strcpy(slash + 1, "progs");
            c.symbol_dir = symdir;
        }
    }
    if (x.first_symbols[0]) {
        c.find_file = find_guest_file;
        c.find_file_ctx = &x.symbols;
        if (!c.symbol_dir)
            c.symbol_dir = x.first_symbols;
    }
    c.vm_name = o.guest ? "hvprof demo guest" : c.guest_desc;
    /* The command line, for the recording to say how it was made (report --header): words
     * with a blank or a quote in single quotes, as a shell would take them back. */
    static char cmdline[1024];
    size_t used = (size_t)snprintf(cmdline, sizeof(cmdline), "hvprof");
    for (int i = 0; i < argc && used + 8 < sizeof(cmdline); i++) {
        bool quote = !argv[i][0] || strpbrk(argv[i], " \t'\"$;&|<>*?\\") != NULL;
        cmdline[used++] = ' ';
        if (quote)
            cmdline[used++] = '\'';
        for (const char *a = argv[i]; *a && used + 6 < sizeof(cmdline); a++) {
            if (*a == '\'' && quote) { /* ' closes, \' is the quote, ' opens again */
                memcpy(cmdline + used, "'\\''", 4);
                used += 4;
            } else {
                cmdline[used++] = *a;
            }
        }
        if (quote)
            cmdline[used++] = '\'';
        cmdline[used] = 0;
    }
    c.command_line = cmdline;

    /* A full disk or RLIMIT_FSIZE must give EFBIG/ENOSPC from write(), not kill us. */
    signal(SIGXFSZ, SIG_IGN);
    if (console_default)
        fprintf(stderr,
                "hvprof record: the guest's console goes to %s (--console - shows it here)\n",
                console_path);

    /* The disks' file systems, for binaries whose unwind tables the guest's memory lacks
     * (docs/diskfs.md). Without them the recording goes on; the summary says why. */
    struct diskfs dfs = {0};
    char dfs_note[1024] = "";
    if (o.ndisks) {
        const char *paths[VM_MAX_DISKS];
        struct image_opts how[VM_MAX_DISKS];
        for (unsigned i = 0; i < o.ndisks; i++) {
            paths[i] = o.disks[i].path;
            how[i] = o.disks[i].image;
        }
        struct hv_err derr = {0};
        if (diskfs_open(&dfs, paths, how, o.ndisks, &derr) == 0)
            c.disks = &dfs;
        else
            snprintf(dfs_note, sizeof(dfs_note), "not read: %s\n", derr.msg);
    }

    struct sampler *s = sampler_create(&c, &err);
    if (!s) {
        fprintf(stderr, "hvprof record: %s\n", err.msg);
        diskfs_close(&dfs);
        return 1;
    }
    if (c.ring_bytes)
        catch_snapshot_signal(s);
    struct vm_hooks hooks;
    sampler_hooks(s, &hooks);
    struct run_session rs;
    /* HVPROF_NO_SYNC_REGS=1 reads registers with KVM_GET_REGS/KVM_GET_SREGS at each sample
     * instead of KVM_CAP_SYNC_REGS: a diagnostic switch (docs/linux.md, "The triple fault"). */
    const char *nosync = getenv("HVPROF_NO_SYNC_REGS");
    bool sync_regs = !(nosync && *nosync && strcmp(nosync, "0") != 0);
    if (run_session_open(&rs, &o, &hooks, sync_regs, &err) < 0) {
        /* The guest never started: no recording of it, so no file (ours, still locked). */
        fprintf(stderr, "hvprof record: %s\n", err.msg);
        sampler_destroy(s); /* removes NAME.part: NAME stays as it was */
        diskfs_close(&dfs);
        return 1;
    }
    run_session_catch_signals(&rs);
    int out_fd = -1;
    if (sampler_attach(s, rs.vm, &rs.boot.image, &err) < 0 || (out_fd = sampler_output_fd(s), 0) ||
        run_sandbox_enter(&o, &rs, &out_fd, 1, &err) < 0 || sampler_start(s, &err) < 0) {
        fprintf(stderr, "hvprof record: %s\n", err.msg);
        run_session_close(&rs);
        sampler_destroy(s);
        diskfs_close(&dfs);
        return 1;
    }
    /* Confined from here on (cli/run_sandbox.h); a tool built on record starts its threads. */
    if (tool && tool->confined)
        tool->confined(tool->ctx);
    struct vm_result res;
    int rc = vm_run(rs.vm, &res, &err);
    run_signals_finishing();
    /* The guest has stopped: the disks' I/O threads end after the request each serves, so the
     * images are as the guest last saw them and the disks' counts hold. */
    vm_disks_stop(&rs.vm->disks);
    if (rc < 0)
        fprintf(stderr, "hvprof record: %s\n", err.msg);
    /* The guest's own end is a flight recorder's trigger (docs/sampling.md). */
    if (rc == 0 && (res.reason == VM_STOP_RESET || res.reason == VM_STOP_TRIPLE_FAULT ||
                    res.reason == VM_STOP_INTERNAL_ERROR))
        sampler_guest_stopped(s, vm_stop_reason_name(res.reason));
    struct hv_err ferr = {0};
    int frc = sampler_finish(s, &ferr);
    /* A tool built on record (tests/tools/): the guest has stopped, its memory is still there. */
    if (tool && tool->guest_stopped)
        tool->guest_stopped(tool->ctx, vm_gmem(rs.vm));
    char disks[4 * 512];
    run_disks_summary(rs.vm, &o, disks, sizeof(disks));
    run_disks_warnings(rs.vm, &o, stderr);
    run_session_close(&rs);
    fflush(stdout);
    bool duration_stop = by_duration && res.reason == VM_STOP_TIMEOUT;
    /* --quiet: errors, how an abnormal stop came and what the file lacks; Ctrl-C and the
     * summary are left out (README.md, "Usage"). */
    bool sigint = res.reason == VM_STOP_SIGNAL && res.status == 128 + SIGINT;
    if (rc == 0 && !duration_stop && !(c.quiet && sigint))
        run_report_stop(stderr, "hvprof record", &res);
    /* On a terminal a few lines, the details behind -v; a file or pipe (a log) gets all. */
    bool full = x.verbose || !isatty(STDERR_FILENO);
    if (c.quiet) {
        sampler_print_warnings(s, stderr);
    } else if (!full) {
        sampler_print_brief(s, stderr);
        sampler_print_warnings(s, stderr);
    } else {
        sampler_print_summary(s, stderr, x.verbose >= 2);
        fputs(disks, stderr);
        if (c.disks)
            diskfs_describe(&dfs, dfs_note, sizeof(dfs_note));
        for (const char *l = dfs_note; *l;) {
            size_t n = strcspn(l, "\n");
            fprintf(stderr, "  disk files: %.*s\n", (int)n, l);
            l += n + (l[n] == '\n');
        }
    }
    if (!c.quiet && full) {
        char sb[160];
        run_sandbox_describe(&o, sb, sizeof(sb));
        fprintf(stderr, "  sandbox: %s\n", sb);
    }
    /* The last lines say what was made and what to run next (perf's "[ perf record: Captured
     * and wrote ... ]"). */
    struct stat ost;
    if (!c.quiet && frc == 0 && stat(c.out_path, &ost) == 0) {
        struct sampler_totals tt;
        sampler_get_totals(s, &tt);
        fprintf(stderr, "[ hvprof record: wrote %s (%.2f MB, %" PRIu64 " samples)%s ]\n",
                c.out_path, (double)ost.st_size / 1e6, tt.user + tt.kernel + tt.idle,
                full ? "" : "; -v for the details");
        fprintf(stderr, "next: hvprof report %s\n", c.out_path);
    }
    if (x.stage_times)
        sampler_print_stage_times(s, stderr);
    bool refused = run_sandbox_report("hvprof record", stderr);
    if (c.ring_bytes)
        signal(SIGUSR2, SIG_IGN); /* the sampler goes: a late signal must not reach it */
    snapshot_sampler = NULL;
    sampler_destroy(s);
    diskfs_close(&dfs);
    if (frc < 0) {
        fprintf(stderr,
                "hvprof record: %s (the file holds everything written before the "
                "failure)\n",
                ferr.msg);
        return 1;
    }
    if (rc < 0 || refused)
        return 1;
    /* Ctrl-C is how a recording is ended: with the file complete it is a success, as for
     * --duration (SIGTERM and SIGHUP, which others send, keep 128 + N; docs/reliability.md). */
    if (sigint)
        return 0;
    return duration_stop ? 0 : res.status;
}
