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
#include "cli/parse.h"
#include "schema/schema.h"
#include "report/fxt_load.h"
#include "report/report.h"

#define PROGRESS_MIN_BYTES (16ull << 20) /* smaller recordings report no progress */

static void report_usage(FILE *out)
{
    fprintf(
        out,
        "usage: hvprof report FILE [options]\n\n"
        "Symbolize an hvprof recording and write a report.\n\n"
        "output:\n"
        "  --format F        top (default), folded, pprof, perf-script, svg, timeline, or all\n"
        "  -o, --output OUT  output file (default: standard output); with --format all a\n"
        "                    directory (default: hvprof-report/)\n"
        "  --title TEXT      title of the flame graph / pprof comment / timeline VM name\n"
        "  --limit N         rows of the top table (default 50)\n"
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
        "  -q, --quiet       no progress or warnings on stderr\n"
        "  -h, --help        this text\n");
}

struct progress {
    const char *what;
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
    fprintf(stderr, "hvprof report: %s %3d%%\n", pr->what, pct);
}

/* One format to `path` (NULL or "-": stdout), a file created in `dirfd` (AT_FDCWD, or the
 * directory of --format all, where a symbolic link planted by someone else is refused). A file
 * that could not be written whole is removed, never left empty or cut. A reader that closed the
 * pipe on stdout (`| head`) ends the command quietly. */
static int write_one(enum report_format f, const struct profile *p, const struct report_opts *o,
                     int dirfd, const char *path, bool quiet)
{
    struct hv_err err = {{0}, 0};
    bool binary = report_format_is_binary(f);
    FILE *out = stdout;
    bool to_file = path && strcmp(path, "-"), regular = false;
    if (to_file) {
        int fd = hv_open_output_at(dirfd, path, dirfd != AT_FDCWD, &err);
        struct stat st;
        regular = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        out = fd < 0 ? NULL : fdopen(fd, "w");
        if (!out) {
            if (fd >= 0)
                close(fd);
            fprintf(stderr, "hvprof report: %s\n", err.msg[0] ? err.msg : strerror(errno));
            return 1;
        }
    } else if (binary && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "hvprof report: --format %s is binary; write it with -o FILE\n",
                report_format_name(f));
        return 2;
    }
    int rc = report_write(f, p, o, out, &err);
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
    if (rc < 0) {
        if (to_file) {
            /* Only a file it created: never a device (/dev/full) or another's special file. */
            if (regular)
                unlinkat(dirfd, path, 0);
            fprintf(stderr, "hvprof report: cannot write %s: %s%s\n", path, err.msg,
                    regular ? " (removed)" : "");
        } else {
            fprintf(stderr, "hvprof report: cannot write the report to stdout: %s\n", err.msg);
        }
        return 1;
    }
    if (!quiet && to_file)
        fprintf(stderr, "hvprof report: wrote %s\n", path);
    return 0;
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

/* Any named symbol (end markers of code sections are nameless, symtab.h)? */
static bool has_named(const struct symtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->names[t->v[i].name])
            return true;
    return false;
}

static void warn_unresolved(const struct profile *p)
{
    for (size_t i = 0; i < p->modules.n; i++) {
        const struct prof_module *m = &p->modules.v[i];
        const struct symtab *t = m->elf ? &m->elf->syms : m->ksyms;
        if (t && !has_named(t) && m->sym_file) {
            fprintf(stderr,
                    "hvprof report: %s matches %s but holds no function symbols (a stripped "
                    "file?); its frames stay module+offset\n",
                    m->sym_file, m->name);
            continue;
        }
        if (m->elf || m->ksyms)
            continue;
        char hex[2 * ELF_BUILD_ID_MAX + 1];
        elf_build_id_hex(m->build_id, m->build_id_len, hex);
        fprintf(stderr,
                "hvprof report: no symbols for %s%s%s; its frames stay module+offset "
                "(try --symbols DIR%s)\n",
                m->name, m->build_id_len ? " build-id " : "", hex,
                m->kernel ? " or --vmlinux/--kallsyms/--system-map" : "");
    }
}

int cmd_report(int argc, char **argv)
{
    enum {
        O_FORMAT = 256,
        O_TITLE,
        O_LIMIT,
        O_SYMBOLS,
        O_KSYMS,
        O_VCPU,
        O_PID,
        O_TID,
        O_COMM,
        O_USER,
        O_KERNEL,
        O_TIME
    };
    static const struct option opts[] = {
        {"format", required_argument, 0, O_FORMAT},
        {"output", required_argument, 0, 'o'},
        {"title", required_argument, 0, O_TITLE},
        {"limit", required_argument, 0, O_LIMIT},
        {"symbols", required_argument, 0, O_SYMBOLS},
        {"vmlinux", required_argument, 0, O_KSYMS},
        {"kallsyms", required_argument, 0, O_KSYMS},
        {"system-map", required_argument, 0, O_KSYMS},
        {"kernel-symbols", required_argument, 0, O_KSYMS},
        {"vcpu", required_argument, 0, O_VCPU},
        {"pid", required_argument, 0, O_PID},
        {"tid", required_argument, 0, O_TID},
        {"comm", required_argument, 0, O_COMM},
        {"user", no_argument, 0, O_USER},
        {"kernel", no_argument, 0, O_KERNEL},
        {"time", required_argument, 0, O_TIME},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int format = REPORT_TOP;
    bool all = false, quiet = false;
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
    while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (c) {
        case O_FORMAT:
            all = !strcmp(optarg, "all");
            if (!all && (format = report_format_parse(optarg)) < 0) {
                fprintf(stderr,
                        "hvprof report: --format %s: expected top, folded, pprof, perf-script, "
                        "svg, timeline or all\n",
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
        case O_SYMBOLS:
            if (symbol_path_add_dir(&sp, optarg, &err) < 0)
                goto bad_value;
            break;
        case O_KSYMS:
            ksyms = optarg;
            break;
        case O_VCPU:
            if (parse_uint(optarg, "--vcpu", 0, UINT32_MAX, &v, &err) < 0)
                goto bad_value;
            filter.has_vcpu = true;
            filter.vcpu = (uint32_t)v;
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
        case O_COMM:
            filter.comm = optarg;
            break;
        case O_USER:
            filter.user_only = true;
            break;
        case O_KERNEL:
            filter.kernel_only = true;
            break;
        case O_TIME:
            if (parse_time_window(optarg, &filter) < 0)
                goto out;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            report_usage(stdout);
            status = 0;
            goto out;
        default:
            fprintf(stderr, "hvprof report: unknown or incomplete option '%s' (try --help)\n",
                    argv[optind - 1]);
            goto out;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, optind >= argc ? "hvprof report: no recording given\n"
                                       : "hvprof report: one recording at a time\n");
        report_usage(stderr);
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
    struct stat st;
    struct progress pr = {.what = "reading", .last = -1};
    pr.on = !quiet && stat(file, &st) == 0 && (uint64_t)st.st_size >= PROGRESS_MIN_BYTES;
    struct fxt_load_stats ls;
    if (fxt_load_profile_file(file, &p, &ls, progress_cb, &pr, &err) < 0) {
        fprintf(stderr, "hvprof report: %s\n", err.msg);
        goto out;
    }
    if (!quiet && ls.dropped)
        fprintf(stderr,
                "hvprof report: %" PRIu64 " records were dropped while recording "
                "(%" PRIu64 " loss records)\n",
                ls.dropped, ls.loss_records);
    if (!quiet && ls.samples == 0)
        fprintf(stderr, "hvprof report: %s holds no samples\n", file);
    if (!quiet && !ls.session_stop)
        fprintf(stderr,
                "hvprof report: %s ends without its session_stop marker: the recording was cut "
                "short (the recorder was killed, or the file is still being written); reporting "
                "the %" PRIu64 " samples it holds\n",
                file, ls.samples);
    if (!quiet && ls.completions_cut)
        fprintf(stderr,
                "hvprof report: %" PRIu64 " kernel samples' completed user stacks were left off: "
                "the recording's completions would expand it beyond 4 frames per word of the "
                "file (a corrupt or hostile recording)\n",
                ls.completions_cut);
    /* The recorder's hint (the built-in guest's program files) comes after any --symbols. */
    struct stat dst;
    if (p.symbol_dir[0] && stat(p.symbol_dir, &dst) == 0 && S_ISDIR(dst.st_mode) &&
        symbol_path_add_dir(&sp, p.symbol_dir, &err) < 0) {
        fprintf(stderr, "hvprof report: %s\n", err.msg);
        goto out;
    }
    size_t loaded = 0;
    if (profile_load_symbols(&p, &sp, &loaded, &err) < 0 ||
        (ksyms && profile_set_kernel_symbols(&p, ksyms, &err) < 0)) {
        fprintf(stderr, "hvprof report: %s\n", err.msg);
        goto out;
    }
    size_t before = p.samples.n;
    profile_filter(&p, &filter);
    if (before && !p.samples.n)
        fprintf(stderr,
                "hvprof report: no sample of %s matches the filters (--vcpu, --pid, "
                "--tid, --comm, --user, --kernel, --time): the report is empty\n",
                file);
    pr = (struct progress){.what = "symbolizing", .last = -1, .on = pr.on};
    /* Source lines are pprof's alone (its -list); the other formats do not pay for them. */
    p.want_lines = all || format == REPORT_PPROF;
    if (profile_symbolize(&p, progress_cb, &pr, &err) < 0) {
        fprintf(stderr, "hvprof report: %s\n", err.msg);
        goto out;
    }
    if (!quiet)
        warn_unresolved(&p);
    if (!all) {
        status = write_one((enum report_format)format, &p, &ro, AT_FDCWD, output, quiet);
        goto out;
    }
    const char *dir = output ? output : "hvprof-report";
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "hvprof report: %s: %s\n", dir, strerror(errno));
        goto out;
    }
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        fprintf(stderr, "hvprof report: %s: %s\n", dir, strerror(errno));
        goto out;
    }
    status = 0;
    /* "report/" given as -o: the paths said are "report/top.txt", not "report//top.txt". */
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    for (int f = 0; f < REPORT_NFORMATS && status == 0; f++) {
        const char *name = report_format_filename((enum report_format)f);
        status = write_one((enum report_format)f, &p, &ro, dirfd, name, true);
        if (status == 0 && !quiet)
            fprintf(stderr, "hvprof report: wrote %.*s%s%s\n", (int)dlen, dir,
                    dlen == 1 && dir[0] == '/' ? "" : "/", name);
    }
    close(dirfd);
    goto out;
bad_value:
    fprintf(stderr, "hvprof report: %s\n", err.msg);
out:
    profile_free(&p);
    symbol_path_free(&sp);
    return status;
}
