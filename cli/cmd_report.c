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

static void report_usage(FILE *out)
{
    fprintf(
        out,
        "usage: hvprof report FILE [options]\n\n"
        "Symbolize an hvprof recording and write a report.\n\n"
        "output:\n"
        "  --format F        top (default), tree (callers and callees), json, folded, pprof,\n"
        "                    perf-script, svg, timeline, or all\n"
        "  -o, --output OUT  output file (default: standard output); with --format all a\n"
        "                    directory (default: hvprof-report/)\n"
        "  --title TEXT      title of the flame graph / pprof comment / timeline VM name\n"
        "  --limit N         rows of the top table, entries of the tree (default 50)\n"
        "symbols:\n"
        "  --symbols DIR     search DIR for symbol files by build-id (DIR/.build-id/xx/rest.debug\n"
        "                    or any ELF file directly in DIR) or by name; repeatable\n"
        "  --vmlinux FILE    guest Linux kernel ELF\n"
        "  --kallsyms FILE   guest /proc/kallsyms copy\n"
        "  --system-map FILE guest System.map (KASLR slide from the recorded MSR_LSTAR)\n"
        "  --kernel-symbols FILE  any of the three above (detected by content)\n"
        "filters:\n"
        "  --vcpu N          samples of vCPU N only\n"
        "  --pid P           process P: the guest's own pid as the report shows it (Linux\n"
        "                    guests), or a process koid; without guest pids n means\n"
        "                    koid 0x10000000+n\n"
        "  --tid T           thread T: the guest's tid, or a thread koid (n: 0x40000000+n)\n"
        "  --comm NAME       samples whose thread or process is named NAME\n"
        "  --user, --kernel  samples taken at CPL 3 / CPL 0 only\n"
        "  --time FROM,TO    samples in [FROM, TO) seconds from the recording's start, e.g.\n"
        "                    2.5,4 or 10, (to the end) or ,1.5; @T marks a timestamp as\n"
        "                    perf-script and the timeline print it (@2651.86,@2652.2)\n"
        "  --exits           the exit events (record --events exits) instead of the samples:\n"
        "                    a table of exits by site with their host time, then their\n"
        "                    stacks rooted at [exit:...] in any format (docs/exits.md)\n"
        "  --off-cpu         the time guest threads spent off their CPU (record --off-cpu)\n"
        "                    instead of the samples, in microseconds, each stack under a\n"
        "                    leaf [off-cpu:S|D|R|...] naming the thread's state\n"
        "                    (docs/off-cpu.md)\n"
        "  --wall            both: on-CPU samples weighted by the period and off-CPU time,\n"
        "                    in microseconds (a hot/cold view of where time went)\n"
        "  -q, --quiet       no progress or warnings on stderr\n"
        "  -f, --force       replace an existing output file (else refused; outputs are\n"
        "                    written as FILE.part, mode 0600, and renamed into place)\n"
        "  -h, --help        this text\n");
}

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
static int parse_id(const char *s, const char *what, uint64_t *out)
{
    struct hv_err err;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2]) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s + 2, &end, 16);
        if (!*end && !errno && v <= UINT32_MAX) {
            *out = v;
            return 0;
        }
    }
    if (parse_uint(s, what, 0, UINT32_MAX, out, &err) < 0) {
        fprintf(stderr, "hvprof report: %s\n", err.msg);
        return -1;
    }
    return 0;
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
static int parse_time_window(const char *arg, struct prof_filter *f)
{
    const char *comma = strchr(arg, ',');
    int absolute = -1;
    if (!comma || time_bound(arg, (size_t)(comma - arg), &f->time_from, &absolute) < 0 ||
        time_bound(comma + 1, strlen(comma + 1), &f->time_to, &absolute) < 0 ||
        (f->time_from < 0 && f->time_to < 0) ||
        (f->time_from >= 0 && f->time_to >= 0 && f->time_to <= f->time_from)) {
        fprintf(stderr,
                "hvprof report: --time %.64s: expected FROM,TO in seconds from the start (2.5,4; "
                "10,; ,1.5) or as timestamps (@2651.86,@2652.2), FROM before TO\n",
                arg);
        return -1;
    }
    f->has_time = true;
    f->time_absolute = absolute == 1;
    return 0;
}

int cmd_report(int argc, char **argv)
{
    enum { O_FORMAT = 256, O_TITLE, O_LIMIT, O_PID, O_TID, O_TIME, O_EXITS, O_OFF_CPU, O_WALL };
    static const struct option opts[] = {
        {"format", required_argument, 0, O_FORMAT},
        {"output", required_argument, 0, 'o'},
        {"title", required_argument, 0, O_TITLE},
        {"limit", required_argument, 0, O_LIMIT},
        REPORT_INPUT_OPTIONS,
        {"pid", required_argument, 0, O_PID},
        {"tid", required_argument, 0, O_TID},
        {"time", required_argument, 0, O_TIME},
        {"exits", no_argument, 0, O_EXITS},
        {"off-cpu", no_argument, 0, O_OFF_CPU},
        {"wall", no_argument, 0, O_WALL},
        {"quiet", no_argument, 0, 'q'},
        {"force", no_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int format = REPORT_TOP;
    bool all = false, quiet = false, force = false;
    const char *output = NULL, *ksyms = NULL;
    struct report_opts ro = {0};
    struct prof_filter filter = {0};
    struct symbol_path sp;
    struct profile p;
    struct hv_err err;
    int status = 2, c;
    uint64_t v;
    symbol_path_init(&sp);
    profile_init(&p);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:qfh", opts, NULL)) != -1) {
        switch (c) {
        case O_FORMAT:
            all = !strcmp(optarg, "all");
            if (!all && (format = report_format_parse(optarg)) < 0) {
                fprintf(stderr,
                        "hvprof report: --format %s: expected top, tree, json, folded, pprof, "
                        "perf-script, svg, timeline or all\n",
                        optarg);
                goto out;
            }
            break;
        case 'o':
            output = optarg;
            break;
        case O_TITLE:
            ro.title = optarg;
            break;
        case O_LIMIT:
            if (parse_uint(optarg, "--limit", 1, 1000000, &v, &err) < 0)
                goto bad_value;
            ro.top_limit = (unsigned)v;
            break;
        case O_PID:
            if (parse_id(optarg, "--pid", &filter.pid) < 0)
                goto out;
            filter.has_pid = true;
            break;
        case O_TID:
            if (parse_id(optarg, "--tid", &filter.tid) < 0)
                goto out;
            filter.has_tid = true;
            break;
        case O_TIME:
            if (parse_time_window(optarg, &filter) < 0)
                goto out;
            break;
        case O_EXITS:
            p.exits = true;
            ro.event_name = "vm-exit";
            break;
        case O_OFF_CPU:
            p.off_cpu = true;
            ro.event_name = "offcpu-time"; /* perf record --off-cpu's event */
            break;
        case O_WALL:
            p.wall = true;
            ro.event_name = "wall-clock";
            break;
        case 'q':
            quiet = true;
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            report_usage(stdout);
            status = 0;
            goto out;
        default:
            switch (report_input_option("hvprof report", c, optarg, &sp, &ksyms, &filter)) {
            case 1:
                break;
            case 0:
                fprintf(stderr, "hvprof report: unknown or incomplete option '%s' (try --help)\n",
                        argv[optind - 1]);
                /* fall through */
            default:
                goto out;
            }
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, optind >= argc ? "hvprof report: no recording given\n"
                                       : "hvprof report: one recording at a time\n");
        report_usage(stderr);
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
                                         .sp = &sp,
                                         .ksyms = ksyms,
                                         .filter = &filter,
                                         .want_lines = all || format == REPORT_PPROF,
                                         .quiet = quiet};
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
    goto out;
bad_value:
    fprintf(stderr, "hvprof report: %s\n", err.msg);
out:
    profile_free(&p);
    symbol_path_free(&sp);
    return status;
}
