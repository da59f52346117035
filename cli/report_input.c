#include "cli/report_input.h"
#include "common/output.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/parse.h"
#include "common/files.h"
#include "report/fxt_load.h"
#include "symbolize/debuginfod.h"

#define PROGRESS_MIN_BYTES (16ull << 20) /* smaller recordings report no progress */

struct progress {
    const char *cmd, *what;
    bool on;
    int last;
};

static void progress_cb(void *ctx, size_t done, size_t total)
{
    struct progress *pr = ctx;
    if (!pr->on || !total)
        return;
    int pct = (int)((double)done * 100.0 / (double)total);
    if (pct / 10 == pr->last / 10 && pct != 100)
        return;
    pr->last = pct;
    fprintf(stderr, "%s: %s %3d%%\n", pr->cmd, pr->what, pct);
}

/* Any named symbol (end markers of code sections are nameless, symtab.h)? */
static bool has_named(const struct symtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->names.v[t->v[i].name])
            return true;
    return false;
}

static void warn_unresolved(const char *cmd, const struct profile *p)
{
    for (size_t i = 0; i < p->modules.n; i++) {
        const struct prof_module *m = &p->modules.v[i];
        if (m->runtime) /* its names are the recording's code records */
            continue;
        const struct symtab *t = sym_source_symtab(&m->src);
        if (t && !has_named(t) && m->src.file) {
            fprintf(stderr,
                    "%s: %s matches %s but holds no function symbols (a stripped file?); its "
                    "frames stay module+offset\n",
                    cmd, m->src.file, m->name);
            continue;
        }
        if (t)
            continue;
        char hex[2 * ELF_BUILD_ID_MAX + 1];
        elf_build_id_hex(m->build_id, m->build_id_len, hex);
        fprintf(stderr,
                "%s: no symbols for %s%s%s; its frames stay module+offset (try --symbols DIR%s)\n",
                cmd, m->name, m->build_id_len ? " build-id " : "", hex,
                m->kernel ? " or --vmlinux/--kallsyms/--system-map" : "");
    }
}

static const struct cli_option symbols_options[] = {
    {REPORT_INPUT_OPT_SYMBOLS, "symbols", 0, "DIR",
     "search DIR for symbol files by build-id (DIR/.build-id/xx/rest.debug\n"
     "or any ELF file directly in DIR) or by name; repeatable;\n"
     "ID=DIR: DIR is container ID's root file system (its files at\n"
     "their paths in the container, docs/containers.md)"},
    {REPORT_INPUT_OPT_KSYMS, "vmlinux", 0, "FILE", "guest Linux kernel ELF"},
    {REPORT_INPUT_OPT_KSYMS, "kallsyms", 0, "FILE", "guest /proc/kallsyms copy"},
    {REPORT_INPUT_OPT_KSYMS, "system-map", 0, "FILE",
     "guest System.map (KASLR slide from the recorded MSR_LSTAR)"},
    {REPORT_INPUT_OPT_KSYMS, "kernel-symbols", 0, "FILE",
     "any of the three above (detected by content)"},
    {REPORT_INPUT_OPT_DEBUGINFOD, "debuginfod", 0, "[=URLS]",
     "ask debuginfod servers by build-id for the debug files the\n"
     "--symbols directories lack (URLS space-separated, as\n"
     "$DEBUGINFOD_URLS, which is asked by default when set)"},
    {REPORT_INPUT_OPT_NO_DEBUGINFOD, "no-debuginfod", 0, NULL,
     "ask no debuginfod server, whatever $DEBUGINFOD_URLS says"},
    {REPORT_INPUT_OPT_NO_DEMANGLE, "no-demangle", 0, NULL,
     "C++ and Rust names as the symbol files hold them (by default\n"
     "demangled, as perf and c++filt print them)"},
};

const struct cli_group report_input_symbols_group = CLI_GROUP("symbols", symbols_options);

static const struct cli_option filter_options[] = {
    {REPORT_INPUT_OPT_PID, "pid", 0, "P[,P...]",
     "samples of these processes: the guest's own pids as the report\n"
     "shows them (Linux guests), or process koids; without guest pids\n"
     "n means koid 0x10000000+n; repeatable (--pids too, as perf)"},
    {REPORT_INPUT_OPT_PID, "pids", 0, "P[,P...]", "the same as --pid"},
    {REPORT_INPUT_OPT_TID, "tid", 0, "T[,T...]",
     "samples of these threads: the guest's tids, or thread koids\n"
     "(n: 0x40000000+n); repeatable (--tids too)"},
    {REPORT_INPUT_OPT_TID, "tids", 0, "T[,T...]", "the same as --tid"},
    {REPORT_INPUT_OPT_COMM, "comm", 0, "NAME[,NAME...]",
     "samples whose thread or process is named NAME: the name, a glob\n"
     "('work*'), or a longer name the guest's 15-character one starts;\n"
     "repeatable (--comms too)"},
    {REPORT_INPUT_OPT_COMM, "comms", 0, "NAME[,NAME...]", "the same as --comm"},
    {REPORT_INPUT_OPT_CGROUP, "cgroup", 0, "PATH[,PATH...]",
     "samples of threads in this cgroup v2 directory, as the guest's\n"
     "/proc/PID/cgroup shows it, or a glob of one ('/machine.slice/*',\n"
     "'*' spans '/'); repeatable (--cgroups too)"},
    {REPORT_INPUT_OPT_CGROUP, "cgroups", 0, "PATH[,PATH...]", "the same as --cgroup"},
    {REPORT_INPUT_OPT_CONTAINER, "container", 0, "ID[,ID...]",
     "samples of these containers: an id's first digits as `docker ps`\n"
     "or `podman ps` show them, or a systemd-nspawn or LXC name;\n"
     "repeatable (docs/containers.md)"},
    {REPORT_INPUT_OPT_VCPU, "vcpu", 'C', "N[,N...]",
     "samples of these vCPUs (perf's -C/--cpu: the guest's CPUs);\n"
     "repeatable"},
    {REPORT_INPUT_OPT_VCPU, "cpu", 0, "N[,N...]", "the same as --vcpu"},
    {REPORT_INPUT_OPT_USER, "user", 0, NULL, "samples taken at CPL 3 only"},
    {REPORT_INPUT_OPT_KERNEL, "kernel", 0, NULL, "samples taken at CPL 0 only"},
    {REPORT_INPUT_OPT_TIME, "time", 0, "FROM,TO",
     "samples in [FROM, TO) seconds from the recording's start, e.g.\n"
     "2.5,4 or 10, (to the end) or ,1.5; @T marks a timestamp as\n"
     "perf-script and the timeline print it (@2651.86,@2652.2)"},
};

const struct cli_group report_input_filter_group = CLI_GROUP("filters", filter_options);

/* A pid or tid as the report prints it (decimal), or a koid as `hvprof dump` prints it (hex,
 * 0x1000004e). */
static int parse_id(const char *s, const char *what, uint64_t *out, struct hv_err *err)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2]) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s + 2, &end, 16);
        if (!*end && !errno && v <= UINT32_MAX) {
            *out = v;
            return 0;
        }
    }
    return parse_uint(s, what, 0, UINT32_MAX, out, err) < 0 ? -1 : 0;
}

/* One bound of --time: "" (open), seconds, or @timestamp. -1 on a bad value. */
static int time_bound(const char *s, size_t len, double *out, int *absolute)
{
    if (len == 0) {
        *out = -1;
        return 0;
    }
    bool at = s[0] == '@';
    if (at != (*absolute == 1) && *absolute >= 0)
        return -1; /* both bounds the same kind */
    *absolute = at;
    char buf[64];
    if (len - at >= sizeof(buf) || len - at == 0)
        return -1;
    memcpy(buf, s + at, len - at);
    buf[len - at] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || errno || !(v >= 0) || v > 1e12)
        return -1;
    *out = v;
    return 0;
}

/* --time FROM,TO (docs/report.md, "Filters"). */
static int parse_time_window(const char *arg, struct prof_filter *f, struct hv_err *err)
{
    const char *comma = strchr(arg, ',');
    int absolute = -1;
    if (f->has_time)
        return hv_errk(err, HV_ERR_USAGE, "--time %.64s: one window per report (given twice)", arg);
    if (!comma || time_bound(arg, (size_t)(comma - arg), &f->time_from, &absolute) < 0 ||
        time_bound(comma + 1, strlen(comma + 1), &f->time_to, &absolute) < 0 ||
        (f->time_from < 0 && f->time_to < 0) ||
        (f->time_from >= 0 && f->time_to >= 0 && f->time_to <= f->time_from)) {
        return hv_errk(err, HV_ERR_USAGE,
                       "--time %.64s: expected FROM,TO in seconds from the start (2.5,4; 10,; "
                       ",1.5) or as timestamps (@2651.86,@2652.2), FROM before TO",
                       arg);
    }
    f->has_time = true;
    f->time_absolute = absolute == 1;
    return 0;
}

/* One entry of a comma-separated list into its filter's list. `opt` names the option in
 * messages. The strings of --comm point into argv (they live as long as the command). */
static int add_entry(struct prof_filter *f, int opt, const char *optname, char *s,
                     struct hv_err *err)
{
    size_t *n = opt == REPORT_INPUT_OPT_PID         ? &f->npids
                : opt == REPORT_INPUT_OPT_TID       ? &f->ntids
                : opt == REPORT_INPUT_OPT_VCPU      ? &f->nvcpus
                : opt == REPORT_INPUT_OPT_CGROUP    ? &f->ncgroups
                : opt == REPORT_INPUT_OPT_CONTAINER ? &f->ncontainers
                                                    : &f->ncomms;
    if (*n == PROF_FILTER_MAX)
        return hv_errk(err, HV_ERR_USAGE, "%s %.64s: more than %d entries", optname, s,
                       PROF_FILTER_MAX);
    if (!*s)
        return hv_errk(err, HV_ERR_USAGE, "%s: an empty entry in the list", optname);
    uint64_t v;
    switch (opt) {
    case REPORT_INPUT_OPT_PID:
        if (parse_id(s, optname, &v, err) < 0)
            return -1;
        f->pids[(*n)++] = v;
        return 0;
    case REPORT_INPUT_OPT_TID:
        if (parse_id(s, optname, &v, err) < 0)
            return -1;
        f->tids[(*n)++] = v;
        return 0;
    case REPORT_INPUT_OPT_VCPU:
        if (parse_uint(s, optname, 0, UINT32_MAX, &v, err) < 0)
            return -1;
        f->vcpus[(*n)++] = (uint32_t)v;
        return 0;
    case REPORT_INPUT_OPT_CGROUP:
        f->cgroups[(*n)++] = s;
        return 0;
    case REPORT_INPUT_OPT_CONTAINER:
        f->containers[(*n)++] = s;
        return 0;
    default:
        f->comms[(*n)++] = s;
        return 0;
    }
}

int report_input_option(int opt, const char *arg, struct report_input_args *a, struct hv_err *err)
{
    struct prof_filter *filter = &a->filter;
    switch (opt) {
    case REPORT_INPUT_OPT_SYMBOLS: {
        /* ID=DIR: a container's root file system (an id or name has no '/'). */
        const char *eq = strchr(arg, '=');
        if (eq && !memchr(arg, '/', (size_t)(eq - arg))) {
            char id[128];
            snprintf(id, sizeof(id), "%.*s", (int)(eq - arg), arg);
            return symbol_path_add_root(&a->sp, id, eq + 1, err) < 0 ? -1 : 1;
        }
        return symbol_path_add_dir(&a->sp, arg, err) < 0 ? -1 : 1;
    }
    case REPORT_INPUT_OPT_KSYMS:
        a->ksyms = arg;
        return 1;
    case REPORT_INPUT_OPT_NO_DEMANGLE:
        a->no_demangle = true;
        return 1;
    case REPORT_INPUT_OPT_DEBUGINFOD:
        a->debuginfod = 1;
        a->debuginfod_urls = arg && *arg ? arg : NULL;
        return 1;
    case REPORT_INPUT_OPT_NO_DEBUGINFOD:
        a->debuginfod = -1;
        return 1;
    case REPORT_INPUT_OPT_VCPU:
    case REPORT_INPUT_OPT_PID:
    case REPORT_INPUT_OPT_TID:
    case REPORT_INPUT_OPT_CGROUP:
    case REPORT_INPUT_OPT_CONTAINER:
    case REPORT_INPUT_OPT_COMM: {
        const char *name = opt == REPORT_INPUT_OPT_VCPU        ? "--vcpu"
                           : opt == REPORT_INPUT_OPT_PID       ? "--pid"
                           : opt == REPORT_INPUT_OPT_TID       ? "--tid"
                           : opt == REPORT_INPUT_OPT_CGROUP    ? "--cgroup"
                           : opt == REPORT_INPUT_OPT_CONTAINER ? "--container"
                                                               : "--comm";
        /* getopt's optarg is argv's own string: the list is cut in place, each entry kept. */
        char *s = (char *)arg;
        for (;;) {
            char *comma = strchr(s, ',');
            if (comma)
                *comma = 0;
            if (add_entry(filter, opt, name, s, err) < 0)
                return -1;
            if (!comma)
                return 1;
            s = comma + 1;
        }
    }
    case REPORT_INPUT_OPT_TIME:
        return parse_time_window(arg, filter, err) < 0 ? -1 : 1;
    case REPORT_INPUT_OPT_USER:
        filter->user_only = true;
        return 1;
    case REPORT_INPUT_OPT_KERNEL:
        filter->kernel_only = true;
        return 1;
    default:
        return 0;
    }
}

int report_input_load(const char *file, const struct report_input_opts *o, struct profile *p)
{
    const char *cmd = o->cmd;
    bool quiet = o->quiet;
    struct hv_err err = {0};
    struct stat st;
    struct progress pr = {.cmd = cmd, .what = "reading", .last = -1};
    pr.on = !quiet && stat(file, &st) == 0 && (uint64_t)st.st_size >= PROGRESS_MIN_BYTES;
    struct fxt_load_stats ls;
    if (fxt_load_profile_file(file, p, &ls, progress_cb, &pr, &err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return 1;
    }
    if (!quiet && ls.dropped)
        fprintf(stderr,
                "%s: %s: %" PRIu64 " records were dropped while recording (%" PRIu64
                " loss records)\n",
                cmd, file, ls.dropped, ls.loss_records);
    if (!quiet && ls.panic)
        fprintf(stderr, "%s: %s: the guest kernel panicked on CPU %u, %.3f s into the recording\n",
                cmd, file, ls.panic_cpu,
                p->start_ts && ls.panic_ts > p->start_ts ? (double)(ls.panic_ts - p->start_ts) / 1e9
                                                         : 0.0);
    if (!quiet && ls.overwritten)
        fprintf(stderr,
                "%s: %s is a flight recording: it holds the newest samples; %" PRIu64
                " older records were overwritten\n",
                cmd, file, ls.overwritten);
    /* Asked for what the recording was made without: an error, not an empty report. */
    if (ls.samples == 0 && p->header.mode[0] &&
        ((p->exits && !p->header.exit_events) || (p->off_cpu && !p->header.off_cpu))) {
        fprintf(stderr, "%s: %s was recorded without %s: it holds no %s to report\n", cmd, file,
                p->exits ? "--events exits" : "--off-cpu",
                p->exits ? "exit events" : "off-CPU records");
        return 1;
    }
    if (!quiet && ls.samples == 0)
        fprintf(stderr, "%s: %s holds no %s\n", cmd, file,
                p->exits     ? "exit events (record with --events exits)"
                : p->off_cpu ? "off-CPU records (record with --off-cpu)"
                             : "samples");
    if (!quiet && ls.off_cpu_skipped)
        fprintf(stderr,
                "%s: %s also holds %" PRIu64 " off-CPU records: --off-cpu or --wall reports them "
                "(docs/off-cpu.md)\n",
                cmd, file, ls.off_cpu_skipped);
    if (!quiet && ls.exit_events_skipped)
        fprintf(stderr,
                "%s: %s also holds %" PRIu64 " exit events: --exits reports them (docs/exits.md)\n",
                cmd, file, ls.exit_events_skipped);
    if (!quiet && ls.cut)
        fprintf(stderr,
                "%s: %s was cut at byte %" PRIu64 ", inside a record of %s%" PRIu64
                " bytes that starts at byte %" PRIu64 ": reporting the %" PRIu64
                " complete records before it (%" PRIu64 " samples); the cut record and whatever "
                "followed it are lost\n",
                cmd, file, ls.cut_offset + ls.cut_have, ls.cut_need ? "" : "at least ",
                ls.cut_need ? ls.cut_need : (uint64_t)8, ls.cut_offset, ls.records, ls.samples);
    if (!quiet && !ls.session_stop && !ls.cut)
        fprintf(stderr,
                "%s: %s ends without its session_stop marker: the recording was cut short (the "
                "recorder was killed, or the file is still being written); reporting the "
                "%" PRIu64 " samples it holds\n",
                cmd, file, ls.samples);
    if (!quiet && ls.completions_cut)
        fprintf(stderr,
                "%s: %s: %" PRIu64 " kernel samples' completed user stacks were left off: the "
                "recording's completions would expand it beyond 4 frames per word of the file (a "
                "corrupt or hostile recording)\n",
                cmd, file, ls.completions_cut);
    /* The recorder's hint (the built-in guest's program files) comes after any --symbols. */
    struct stat dst;
    if (p->symbol_dir[0] && stat(p->symbol_dir, &dst) == 0 && S_ISDIR(dst.st_mode) &&
        symbol_path_add_dir(o->sp, p->symbol_dir, &err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return 1;
    }
    /* debuginfod servers after the local directories, by build-id. */
    struct hv_debuginfod dfd;
    if (o->debuginfod >= 0 &&
        hv_debuginfod_open(&dfd, o->debuginfod_urls, quiet ? NULL : cmd, &err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return 1;
    }
    if (o->debuginfod > 0 && !dfd.client) {
        fprintf(stderr,
                "%s: --debuginfod: no server to ask: give --debuginfod=URLS or set "
                "DEBUGINFOD_URLS\n",
                cmd);
        return 2;
    }
    o->sp->debuginfod = o->debuginfod >= 0 && dfd.client ? &dfd : NULL;
    size_t loaded = 0;
    int lrc = profile_load_symbols(p, o->sp, &loaded, &err);
    o->sp->debuginfod = NULL;
    if (o->debuginfod >= 0) {
        hv_debuginfod_summary(&dfd, stderr);
        hv_debuginfod_close(&dfd);
    }
    if (lrc < 0 || (o->ksyms && profile_set_kernel_symbols(p, o->ksyms, &err) < 0)) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return 1;
    }
    /* Only a filter that selects something costs its passes (the explanation's and its own). */
    if (o->filter && profile_filter_active(o->filter)) {
        char why[512];
        profile_filter_explain(p, o->filter, why, sizeof(why));
        size_t before = p->samples.n;
        profile_filter(p, o->filter);
        if (before && !p->samples.n)
            fprintf(stderr, "%s: %s: the report is empty: %s\n", cmd, file, why);
    }
    pr = (struct progress){.cmd = cmd, .what = "symbolizing", .last = -1, .on = pr.on};
    p->want_lines = o->want_lines;
    p->no_demangle = o->no_demangle;
    if (profile_symbolize(p, progress_cb, &pr, &err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return 1;
    }
    if (!quiet)
        warn_unresolved(cmd, p);
    return 0;
}

int report_output_write(const char *cmd, const char *format_name, bool binary, int dirfd,
                        const char *path, unsigned flags, report_output_fn write, void *ctx)
{
    struct hv_err err = {0};
    FILE *out = stdout;
    bool to_file = path && strcmp(path, "-");
    struct hv_output o = {.fd = -1, .dirfd = -1};
    if (to_file) {
        if (hv_output_open(&o, dirfd, path, flags & REPORT_OUT_FORCE ? HV_OUTPUT_FORCE : 0, &err) <
            0) {
            fprintf(stderr, "%s: %s\n", cmd, err.msg);
            return 1;
        }
        out = fdopen(o.fd, "w");
        if (!out) {
            fprintf(stderr, "%s: %s: %s\n", cmd, path, strerror(errno));
            hv_output_discard(&o);
            hv_output_close(&o);
            return 1;
        }
        o.fd = -1; /* the stream's now */
    } else if (binary && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "%s: --format %s is binary; write it with -o FILE\n", cmd, format_name);
        return 2;
    }
    int rc = write(ctx, out, &err);
    if (rc == 0 && fflush(out) != 0)
        rc = hv_errf_errno(&err, "write");
    if (rc == 0 && ferror(out)) {
        errno = EIO;
        rc = hv_errf_errno(&err, "write");
    }
    if (!to_file && rc < 0 && errno == EPIPE)
        return 0; /* the reader has what it wanted */
    if (to_file && fclose(out) != 0 && rc == 0)
        rc = hv_errf_errno(&err, "close");
    /* Whole: it takes its name. */
    if (to_file && rc == 0 && hv_output_commit(&o, &err) < 0)
        rc = -1;
    if (rc < 0) {
        if (to_file) {
            /* NAME.part goes; NAME (another's file, a device) stays as it was. */
            bool device = o.device;
            hv_output_discard(&o);
            hv_output_close(&o);
            fprintf(stderr, "%s: cannot write %s: %s%s\n", cmd, path, err.msg,
                    device ? "" : " (nothing written)");
        } else {
            fprintf(stderr, "%s: cannot write the report to stdout: %s\n", cmd, err.msg);
        }
        return 1;
    }
    hv_output_close(&o);
    if (!(flags & REPORT_OUT_QUIET) && to_file)
        fprintf(stderr, "%s: wrote %s\n", cmd, path);
    return 0;
}

int report_dir_open(struct report_dir *d, const char *cmd, const char *name, unsigned flags)
{
    *d = (struct report_dir){.cmd = cmd,
                             .name = name,
                             .fd = -1,
                             .quiet = flags & REPORT_OUT_QUIET,
                             .force = flags & REPORT_OUT_FORCE};
    if (mkdir(name, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "%s: %s: %s\n", cmd, name, strerror(errno));
        return 1;
    }
    d->fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->fd < 0) {
        fprintf(stderr, "%s: %s: %s\n", cmd, name, strerror(errno));
        return 1;
    }
    d->len = strlen(name);
    while (d->len > 1 && name[d->len - 1] == '/')
        d->len--;
    return 0;
}

int report_dir_write(const struct report_dir *d, const char *format_name, bool binary,
                     const char *file, report_output_fn write, void *ctx)
{
    int status =
        report_output_write(d->cmd, format_name, binary, d->fd, file,
                            REPORT_OUT_QUIET | (d->force ? REPORT_OUT_FORCE : 0), write, ctx);
    if (status == 0 && !d->quiet)
        fprintf(stderr, "%s: wrote %.*s%s%s\n", d->cmd, (int)d->len, d->name,
                d->len == 1 && d->name[0] == '/' ? "" : "/", file);
    return status;
}

void report_dir_close(struct report_dir *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}
