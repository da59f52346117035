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

enum {
    O_FORMAT = 256,
    O_TITLE,
    O_LIMIT,
    O_EXITS,
    O_OFF_CPU,
    O_WALL,
    O_STDIO,
    O_CHILDREN,
    O_NO_CHILDREN,
    O_PERCENT_LIMIT,
    O_HEADER,
    O_HEADER_ONLY,
    O_MAX_DEPTH,
    O_FOLD_RECURSION,
    O_SRCLINE,
};

/* --sort's help from the keys' table. */
static char sort_help[256];
__attribute__((constructor)) static void sort_help_init(void)
{
    snprintf(sort_help, sizeof(sort_help),
             "the top table's rows keyed as perf's --sort: any of\n"
             "%s (cpu too), e.g. comm,dso,sym;\n"
             "default dso,sym with the per-process and per-vCPU tables",
             report_sort_key_list());
}

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
    {'i', "input", 'i', "FILE", "the recording (perf's -i; or give it as the argument)"},
    {'s', "sort", 's', "KEYS", sort_help},
    {O_CHILDREN, "children", 0, NULL,
     "the top table's Children and Self columns, by children\n"
     "(samples with the function anywhere on the stack; the default)"},
    {O_NO_CHILDREN, "no-children", 0, NULL,
     "one Overhead column: the samples at the leaf (perf's\n"
     "--no-children)"},
    {O_PERCENT_LIMIT, "percent-limit", 0, "PCT", "rows under PCT % of the samples left out"},
    {O_HEADER, "header", 0, NULL,
     "open with what the recording says of itself: its time, length,\n"
     "rate, vCPUs, guest kernel and command line"},
    {O_HEADER_ONLY, "header-only", 0, NULL, "that alone (perf's --header-only)"},
    {O_STDIO, "stdio", 0, NULL, "text on standard output (the default; perf's --stdio)"},
    {'g', "call-graph", 'g', NULL, "the callers and callees of each function (--format tree)"},
    {O_SRCLINE, "srcline", 0, NULL,
     "perf-script: each frame's source file and line under it, as\n"
     "perf script -F +srcline prints them (from the modules' DWARF)"},
    {'F', "fields", 'F', "+F[,+F]",
     "perf-script: perf's extra fields, +srcline (as --srcline) and\n"
     "+cgroup (the sample's cgroup path, docs/containers.md)"},
    {'v', "verbose", 'v', NULL,
     "the tree: each function's source file and line (from its\n"
     "module's DWARF) and where its names came from (a symbol file,\n"
     "debuginfod, MiniDebugInfo, the recording)"},
    {O_MAX_DEPTH, "max-depth", 0, "N",
     "folded stacks and flame graphs: the N frames nearest the root\n"
     "of each stack (a tall graph's height capped)"},
    {O_FOLD_RECURSION, "fold-recursion", 0, NULL,
     "folded stacks and flame graphs: a function that calls itself,\n"
     "directly or through frames of its own, one frame"},
    REPORT_INPUT_OUTPUT_OPTIONS,
};

static const struct cli_option event_options[] = {
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
static const struct cli_group event_group = CLI_GROUP("what to report", event_options);
static const struct cli_group *const report_groups[] = {
    &output_group, &event_group, &report_input_filter_group, &report_input_symbols_group};

const struct cli_command cli_report = {
    .name = "report",
    .synopsis = "FILE [options]",
    .about = "Symbolize an hvprof recording and write a report.",
    .examples = "hvprof report demo.fxt --sort comm,dso --no-children --percent-limit 1\n"
                "hvprof report demo.fxt --comm 'work*' --format svg -o flame.svg\n"
                "hvprof report demo.fxt --format pprof -o demo.pb.gz && pprof -top demo.pb.gz",
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

static int write_header(void *ctx, FILE *out, struct hv_err *err)
{
    return report_write_header(ctx, out, err);
}

static int write_one(enum report_format f, const struct profile *p, const struct report_opts *o,
                     int dirfd, const char *path, unsigned flags)
{
    struct format_job j = {f, p, o};
    return report_output_write("hvprof report", report_format_name(f), report_format_is_binary(f),
                               dirfd, path, flags, write_format, &j);
}

/* What the options set (cli_parse's handler). */
struct report_args {
    int format;
    bool all, quiet, force, format_given, header_only;
    const char *output, *input;
    struct report_opts ro;
    struct report_input_args in;
    struct profile *p;
};

static int handle(void *ctx, int id, const char *arg, struct hv_err *err)
{
    struct report_args *a = ctx;
    uint64_t v;
    switch (id) {
    case O_FORMAT:
        a->format_given = true;
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
    case 'i':
        if (a->input)
            return hv_errk(err, HV_ERR_USAGE, "-i %s: one recording at a time (-i %s given)", arg,
                           a->input);
        a->input = arg;
        return 1;
    case 's':
        return report_sort_parse(arg, &a->ro.sort, err) < 0 ? -1 : 1;
    case O_CHILDREN:
        a->ro.no_children = false;
        return 1;
    case O_NO_CHILDREN:
        a->ro.no_children = true;
        return 1;
    case O_PERCENT_LIMIT: {
        char *end;
        errno = 0;
        double share = strtod(arg, &end);
        if (end != arg && *end == '%')
            end++;
        if (*end || errno || !(share >= 0 && share <= 100))
            return hv_errk(err, HV_ERR_USAGE,
                           "--percent-limit %.32s: expected a share in [0, 100], "
                           "e.g. 1 or 0.5",
                           arg);
        a->ro.percent_limit = share;
        return 1;
    }
    case O_HEADER:
        a->ro.header = true;
        return 1;
    case O_HEADER_ONLY:
        a->header_only = true;
        return 1;
    case O_STDIO:
        return 1;
    case 'g':
        if (!a->format_given)
            a->format = REPORT_TREE;
        return 1;
    case 'v':
        a->ro.verbose = true;
        return 1;
    case O_SRCLINE:
        a->ro.srcline = true;
        return 1;
    case 'F':
        for (const char *f = arg; *f;) {
            size_t n = strcspn(f, ",");
            if (n == 8 && !strncmp(f, "+srcline", 8))
                a->ro.srcline = true;
            else if (n == 7 && !strncmp(f, "+cgroup", 7))
                a->ro.cgroup = true;
            else
                return hv_errk(err, HV_ERR_USAGE,
                               "--fields %.64s: '%.*s' is not one hvprof adds (+srcline, +cgroup; "
                               "perf-script prints perf's default fields)",
                               arg, (int)(n > 32 ? 32 : n), f);
            f += n;
            if (*f == ',')
                f++;
        }
        return 1;
    case O_MAX_DEPTH:
        if (parse_uint(arg, "--max-depth", 1, 100000, &v, err) < 0)
            return -1;
        a->ro.max_depth = (unsigned)v;
        return 1;
    case O_FOLD_RECURSION:
        a->ro.fold_recursion = true;
        return 1;
    case 'q':
        a->quiet = true;
        return 1;
    case 'f':
        a->force = true;
        return 1;
    default:
        return report_input_option(id, arg, &a->in, err);
    }
}

int cmd_report(int argc, char **argv)
{
    struct profile p;
    struct report_args a = {.format = REPORT_TOP, .p = &p};
    struct hv_err err;
    int status = 2;
    symbol_path_init(&a.in.sp);
    profile_init(&p);
    int rc = cli_parse(&cli_report, argc, argv, handle, &a);
    if (rc) {
        status = rc == 1 ? 0 : 2;
        goto out;
    }
    int format = a.format;
    bool all = a.all, quiet = a.quiet, force = a.force;
    const char *output = a.output, *ksyms = a.in.ksyms;
    struct report_opts ro = a.ro;
    struct prof_filter filter = a.in.filter;
    if (a.input ? optind != argc : optind != argc - 1) {
        fprintf(stderr, optind >= argc && !a.input
                            ? "hvprof report: no recording given (hvprof report FILE, or -i FILE)\n"
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
    const char *file = a.input ? a.input : argv[optind];
    const struct hv_file_role outs[] = {{"-o", all ? NULL : output}};
    const struct hv_file_role ins[] = {{"the recording", file}, {"--kernel-symbols", ksyms}};
    if (hv_check_outputs(outs, 1, ins, 2, &err) < 0) {
        fprintf(stderr, "hvprof report: %s\n", err.msg);
        goto out;
    }
    status = 1;
    /* Source lines are pprof's (its -list) and the verbose tree's; the other formats do not pay
     * for them. */
    const struct report_input_opts in = {.cmd = "hvprof report",
                                         .sp = &a.in.sp,
                                         .ksyms = ksyms,
                                         .filter = &filter,
                                         .want_lines = all || format == REPORT_PPROF ||
                                                       (format == REPORT_TREE && ro.verbose) ||
                                                       (format == REPORT_PERF_SCRIPT && ro.srcline),
                                         .no_demangle = a.in.no_demangle,
                                         .debuginfod = a.in.debuginfod,
                                         .debuginfod_urls = a.in.debuginfod_urls,
                                         .quiet = quiet};
    /* One entry per distinct stack unless an output needs each sample's own time
     * (docs/report.md, "Memory"). */
    p.aggregate =
        !filter.has_time && !all && !report_format_needs_each_sample((enum report_format)format);
    if (report_input_load(file, &in, &p) != 0)
        goto out;
    if (a.header_only) {
        status = report_output_write(
            "hvprof report", "header", false, AT_FDCWD, output,
            (quiet ? REPORT_OUT_QUIET : 0) | (force ? REPORT_OUT_FORCE : 0), write_header, &p);
        goto out;
    }
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
    symbol_path_free(&a.in.sp);
    return status;
}
