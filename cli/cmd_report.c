/* hvprof report: symbolize a recording and write it as a top table, folded stacks, pprof,
 * perf-script text, an SVG flame graph or a timeline FXT (docs/report.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/files.h"
#include "cli/commands.h"
#include "cli/report_input.h"
#include "cli/parse.h"
#include "schema/schema.h"
#include "report/fxt_load.h"
#include "report/report.h"

enum { O_FORMAT = 256, O_TITLE, O_LIMIT, O_PID, O_TID, O_TIME, O_EXITS, O_OFF_CPU, O_WALL };

/* --format's help from the report's format table, before main() runs (the table's rows are
 * constant: they point at it). */
static char format_help[512];
__attribute__((constructor)) static void format_help_init(void)
{
    snprintf(format_help, sizeof(format_help),
             "%s,\n"
             "or all (every format into a directory); default top (docs/report.md)",
             report_format_list());
}

static const struct cli_option output_options[] = {
    {O_FORMAT, "format", 0, "F", format_help},
    {'o', "output", 'o', "OUT",
     "output file (default: standard output); with --format all a\n"
     "directory (default: hvprof-report/)"},
    {O_TITLE, "title", 0, "TEXT", "title of the flame graph / pprof comment / timeline VM name"},
    {O_LIMIT, "limit", 0, "N", "rows of the top table, entries of the tree (default 50)"},
    REPORT_INPUT_OUTPUT_OPTIONS,
};

static const struct cli_option filter_options[] = {
    REPORT_INPUT_FILTER_OPTIONS,
    {O_PID, "pid", 0, "P",
     "process P: the guest's own pid as the report shows it (Linux\n"
     "guests), or a process koid; without guest pids n means\n"
     "koid 0x10000000+n"},
    {O_TID, "tid", 0, "T", "thread T: the guest's tid, or a thread koid (n: 0x40000000+n)"},
    {O_TIME, "time", 0, "FROM,TO",
     "samples in [FROM, TO) seconds from the recording's start, e.g.\n"
     "2.5,4 or 10, (to the end) or ,1.5; @T marks a timestamp as\n"
     "perf-script and the timeline print it (@2651.86,@2652.2)"},
    {O_EXITS, "exits", 0, NULL,
     "the exit events (record --events exits) instead of the samples:\n"
     "a table of exits by site with their host time, then their\n"
     "stacks rooted at [exit:...] in any format (docs/exits.md)"},
    {O_OFF_CPU, "off-cpu", 0, NULL,
     "the time guest threads spent off their CPU (record --off-cpu)\n"
     "instead of the samples, in microseconds, each stack under a\n"
     "leaf [off-cpu:S|D|R|...] naming the thread's state\n"
     "(docs/off-cpu.md)"},
    {O_WALL, "wall", 0, NULL,
     "both: on-CPU samples weighted by the period and off-CPU time,\n"
     "in microseconds (a hot/cold view of where time went)"},
};

static const struct cli_group output_group = CLI_GROUP("output", output_options);
static const struct cli_group filter_group = CLI_GROUP("filters", filter_options);
static const struct cli_group *const report_groups[] = {&output_group, &report_input_symbols_group,
                                                        &filter_group};

const struct cli_command cli_report = {
    .name = "report",
    .synopsis = "FILE [options]",
    .about = "Symbolize an hvprof recording and write a report.",
    .groups = report_groups,
    .ngroups = sizeof(report_groups) / sizeof(report_groups[0]),
};

/* report_write for one format, as report_output_write calls it. */
struct format_job {
    enum report_format f;
    const struct profile *p;
    const struct report_opts *o;
};

static int write_format(void *ctx, FILE *out, struct hv_err *err)
{
    const struct format_job *j = ctx;
    return report_write(j->f, j->p, j->o, out, err);
}

static int write_one(enum report_format f, const struct profile *p, const struct report_opts *o,
                     int dirfd, const char *path, unsigned flags)
{
    struct format_job j = {f, p, o};
    return report_output_write("hvprof report", report_format_name(f), report_format_is_binary(f),
                               dirfd, path, flags, write_format, &j);
}

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

/* What the options set (cli_parse's handler). */
struct report_args {
    int format;
    bool all, quiet, force;
    const char *output, *ksyms;
    struct report_opts ro;
    struct prof_filter filter;
    struct symbol_path sp;
    struct profile *p;
};

static int handle(void *ctx, int id, const char *arg, struct hv_err *err)
{
    struct report_args *a = ctx;
    uint64_t v;
    switch (id) {
    case O_FORMAT:
        a->all = !strcmp(arg, "all");
        if (!a->all && (a->format = report_format_parse(arg)) < 0)
            return hv_errk(err, HV_ERR_USAGE, "--format %s: expected %s or all", arg,
                           report_format_list());
        return 1;
    case 'o':
        a->output = arg;
        return 1;
    case O_TITLE:
        a->ro.title = arg;
        return 1;
    case O_LIMIT:
        if (parse_uint(arg, "--limit", 1, 1000000, &v, err) < 0)
            return -1;
        a->ro.top_limit = (unsigned)v;
        return 1;
    case O_PID:
        if (parse_id(arg, "--pid", &a->filter.pid, err) < 0)
            return -1;
        a->filter.has_pid = true;
        return 1;
    case O_TID:
        if (parse_id(arg, "--tid", &a->filter.tid, err) < 0)
            return -1;
        a->filter.has_tid = true;
        return 1;
    case O_TIME:
        return parse_time_window(arg, &a->filter, err) < 0 ? -1 : 1;
    case O_EXITS:
        a->p->exits = true;
        a->ro.event_name = "vm-exit";
        return 1;
    case O_OFF_CPU:
        a->p->off_cpu = true;
        a->ro.event_name = "offcpu-time"; /* perf record --off-cpu's event */
        return 1;
    case O_WALL:
        a->p->wall = true;
        a->ro.event_name = "wall-clock";
        return 1;
    case 'q':
        a->quiet = true;
        return 1;
    case 'f':
        a->force = true;
        return 1;
    default:
        return report_input_option(id, arg, &a->sp, &a->ksyms, &a->filter, err);
    }
}

int cmd_report(int argc, char **argv)
{
    struct profile p;
    struct report_args a = {.format = REPORT_TOP, .p = &p};
    struct hv_err err;
    int status = 2;
    symbol_path_init(&a.sp);
    profile_init(&p);
    int rc = cli_parse(&cli_report, argc, argv, handle, &a);
    if (rc) {
        status = rc == 1 ? 0 : 2;
        goto out;
    }
    int format = a.format;
    bool all = a.all, quiet = a.quiet, force = a.force;
    const char *output = a.output, *ksyms = a.ksyms;
    struct report_opts ro = a.ro;
    struct prof_filter filter = a.filter;
    if (optind != argc - 1) {
        fprintf(stderr, optind >= argc ? "hvprof report: no recording given\n"
                                       : "hvprof report: one recording at a time\n");
        cli_usage(stderr, &cli_report);
        goto out;
    }
    if ((int)p.exits + (int)p.off_cpu + (int)p.wall > 1) {
        fprintf(stderr, "hvprof report: --exits, --off-cpu and --wall exclude each other\n");
        goto out;
    }
    if (filter.user_only && filter.kernel_only) {
        fprintf(stderr, "hvprof report: --user and --kernel exclude each other\n");
        goto out;
    }
    const char *file = argv[optind];
    const struct hv_file_role outs[] = {{"-o", all ? NULL : output}};
    const struct hv_file_role ins[] = {{"the recording", file}, {"--kernel-symbols", ksyms}};
    if (hv_check_outputs(outs, 1, ins, 2, &err) < 0) {
        fprintf(stderr, "hvprof report: %s\n", err.msg);
        goto out;
    }
    status = 1;
    /* Source lines are pprof's alone (its -list); the other formats do not pay for them. */
    const struct report_input_opts in = {.cmd = "hvprof report",
                                         .sp = &a.sp,
                                         .ksyms = ksyms,
                                         .filter = &filter,
                                         .want_lines = all || format == REPORT_PPROF,
                                         .quiet = quiet};
    /* One entry per distinct stack unless an output needs each sample's own time
     * (docs/report.md, "Memory"). */
    p.aggregate =
        !filter.has_time && !all && !report_format_needs_each_sample((enum report_format)format);
    if (report_input_load(file, &in, &p) != 0)
        goto out;
    if (!all) {
        status = write_one((enum report_format)format, &p, &ro, AT_FDCWD, output,
                           (quiet ? REPORT_OUT_QUIET : 0) | (force ? REPORT_OUT_FORCE : 0));
        goto out;
    }
    struct report_dir dir;
    if (report_dir_open(&dir, "hvprof report", output ? output : "hvprof-report",
                        (quiet ? REPORT_OUT_QUIET : 0) | (force ? REPORT_OUT_FORCE : 0)) != 0)
        goto out;
    status = 0;
    for (int f = 0; f < REPORT_NFORMATS && status == 0; f++) {
        struct format_job j = {(enum report_format)f, &p, &ro};
        status = report_dir_write(&dir, report_format_name(j.f), report_format_is_binary(j.f),
                                  report_format_filename(j.f), write_format, &j);
    }
    report_dir_close(&dir);
out:
    profile_free(&p);
    symbol_path_free(&a.sp);
    return status;
}
