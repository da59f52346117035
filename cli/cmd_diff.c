/* hvprof diff: two recordings compared, as a table of shares and changes, differential folded
 * stacks or a red/blue flame graph (docs/report.md, "Comparing two recordings"). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/parse.h"
#include "cli/report_input.h"
#include "common/files.h"
#include "report/report.h"
#include "report/report_diff.h"

enum diff_format {
    DIFF_TOP,
    DIFF_TREE,
    DIFF_FOLDED,
    DIFF_SVG,
    DIFF_JSON,
    DIFF_NFORMATS,
    DIFF_PPROF = DIFF_NFORMATS
};

static const struct {
    const char *name, *file;
    int (*write)(const struct report_diff *, const struct report_diff_opts *, FILE *,
                 struct hv_err *);
} formats[DIFF_NFORMATS] = {
    [DIFF_TOP] = {"top", "diff.txt", report_diff_write_top},
    [DIFF_TREE] = {"tree", "diff-tree.txt", report_diff_write_tree},
    [DIFF_FOLDED] = {"folded", "diff.folded", report_diff_write_folded},
    [DIFF_SVG] = {"svg", "diff.svg", report_diff_write_svg},
    [DIFF_JSON] = {"json", "diff.json", report_diff_write_json},
};

struct diff_job {
    enum diff_format f;
    const struct report_diff *d;
    const struct report_diff_opts *o;
};

static int write_diff(void *ctx, FILE *out, struct hv_err *err)
{
    const struct diff_job *j = ctx;
    return formats[j->f].write(j->d, j->o, out, err);
}

struct pprof_job {
    const struct profile *p;
    struct report_opts o;
};

static int write_pprof(void *ctx, FILE *out, struct hv_err *err)
{
    const struct pprof_job *j = ctx;
    return report_write(REPORT_PPROF, j->p, &j->o, out, err);
}

/* base.pb.gz and new.pb.gz in the directory, each naming its functions as if the other's were
 * in it too: a name shared by two binaries in either is qualified in both. */
static int write_pprofs(const struct profile *base, const struct profile *new,
                        const struct report_dir *dir)
{
    struct pprof_job j[2] = {{base, {.title = "hvprof diff: base", .names_with = new}},
                             {new, {.title = "hvprof diff: new", .names_with = base}}};
    int status = report_dir_write(dir, "pprof", true, "base.pb.gz", write_pprof, &j[0]);
    return status ? status : report_dir_write(dir, "pprof", true, "new.pb.gz", write_pprof, &j[1]);
}

enum { O_FORMAT = 256, O_TITLE, O_LIMIT, O_RAW, O_WIDTHS };

static const struct cli_option output_options[] = {
    {O_FORMAT, "format", 0, "F",
     "top (default: each function's self and children shares in\n"
     "both, and the change), tree (the most changed functions'\n"
     "callers and callees in both), folded (\"stack base new\" lines,\n"
     "as FlameGraph's difffolded.pl writes them), svg (a flame graph\n"
     "of both, red where NEW has more than BASE, blue where less),\n"
     "json (docs/json.md), pprof (base.pb.gz and new.pb.gz, functions\n"
     "named alike in both, for 'pprof -diff_base=base.pb.gz\n"
     "new.pb.gz'), or all"},
    {O_WIDTHS, "widths", 0, "W",
     "the svg's widths: union (default: the larger of NEW's and\n"
     "BASE's samples, so code gone from NEW is drawn at its BASE\n"
     "width), new (NEW's, as flamegraph.pl draws difffolded output) or\n"
     "base (BASE's)"},
    {'o', "output", 'o', "OUT",
     "output file (default: standard output); with --format pprof\n"
     "or all a directory (default: hvprof-diff/)"},
    {O_RAW, "raw", 0, NULL,
     "counts as recorded; by default BASE's counts are scaled to\n"
     "NEW's total, so that a longer recording is no change"},
    {O_TITLE, "title", 0, "TEXT", "title of the flame graph"},
    {O_LIMIT, "limit", 0, "N", "rows of the table (default 50)"},
    REPORT_INPUT_OUTPUT_OPTIONS,
};

static const struct cli_group output_group = CLI_GROUP("output", output_options);
static const struct cli_group *const diff_groups[] = {&output_group, &report_input_filter_group,
                                                      &report_input_symbols_group};

const struct cli_command cli_diff = {
    .name = "diff",
    .synopsis = "BASE.fxt NEW.fxt [options]",
    .about = "Compare two recordings: what changed from BASE to NEW.",
    .examples =
        "hvprof diff before.fxt after.fxt                      # the largest changes first\n"
        "hvprof diff before.fxt after.fxt --format svg -o diff.svg\n"
        "hvprof diff before.fxt after.fxt --format pprof -o cmp && pprof -diff_base "
        "cmp/base.pb.gz cmp/new.pb.gz",
    .groups = diff_groups,
    .ngroups = sizeof(diff_groups) / sizeof(diff_groups[0]),
};

struct diff_args {
    int format;
    bool all, quiet, force;
    const char *output;
    struct report_diff_opts dopt;
    struct report_input_args in;
};

static int handle(void *ctx, int id, const char *arg, struct hv_err *err)
{
    struct diff_args *a = ctx;
    uint64_t v;
    switch (id) {
    case O_FORMAT:
        a->all = !strcmp(arg, "all");
        a->format = -1;
        for (int f = 0; f < DIFF_NFORMATS && !a->all; f++)
            if (!strcmp(arg, formats[f].name))
                a->format = f;
        if (!strcmp(arg, "pprof"))
            a->format = DIFF_PPROF;
        if (!a->all && a->format < 0) {
            /* The names from the format table, and pprof (a directory of two files). */
            char list[128] = "";
            for (int f = 0; f < DIFF_NFORMATS; f++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s, ", formats[f].name);
            return hv_errk(err, HV_ERR_USAGE, "--format %s: expected %spprof or all", arg, list);
        }
        return 1;
    case 'o':
        a->output = arg;
        return 1;
    case O_TITLE:
        a->dopt.title = arg;
        return 1;
    case O_LIMIT:
        if (parse_uint(arg, "--limit", 1, 1000000, &v, err) < 0)
            return -1;
        a->dopt.limit = (unsigned)v;
        return 1;
    case O_RAW:
        a->dopt.raw = true;
        return 1;
    case O_WIDTHS:
        if (!strcmp(arg, "union"))
            a->dopt.widths = REPORT_DIFF_WIDTHS_UNION;
        else if (!strcmp(arg, "new"))
            a->dopt.widths = REPORT_DIFF_WIDTHS_NEW;
        else if (!strcmp(arg, "base"))
            a->dopt.widths = REPORT_DIFF_WIDTHS_BASE;
        else
            return hv_errk(err, HV_ERR_USAGE, "--widths %s: expected union, new or base", arg);
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

int cmd_diff(int argc, char **argv)
{
    struct diff_args a = {.format = DIFF_TOP};
    struct profile base, new;
    struct report_diff d = {0};
    struct hv_err err;
    int status = 2;
    symbol_path_init(&a.in.sp);
    profile_init(&base);
    profile_init(&new);
    int rc = cli_parse(&cli_diff, argc, argv, handle, &a);
    if (rc) {
        status = rc == 1 ? 0 : 2;
        goto out;
    }
    int format = a.format;
    bool all = a.all, quiet = a.quiet, force = a.force;
    const char *output = a.output, *ksyms = a.in.ksyms;
    struct report_diff_opts dopt = a.dopt;
    struct prof_filter filter = a.in.filter;
    if (argc - optind != 2) {
        fprintf(stderr, "hvprof diff: two recordings, BASE and NEW, are needed (%d given)\n",
                argc - optind < 0 ? 0 : argc - optind);
        cli_usage(stderr, &cli_diff);
        goto out;
    }
    if (filter.user_only && filter.kernel_only) {
        fprintf(stderr, "hvprof diff: --user and --kernel exclude each other\n");
        goto out;
    }
    dopt.base_name = argv[optind];
    dopt.new_name = argv[optind + 1];
    bool to_dir = all || format == DIFF_PPROF;
    /* pprof is two files, base.pb.gz and new.pb.gz: -o names their directory. */
    size_t olen = output ? strlen(output) : 0;
    if (format == DIFF_PPROF && olen > 3 && !strcmp(output + olen - 3, ".gz")) {
        fprintf(stderr,
                "hvprof diff: -o %s: --format pprof writes two files (base.pb.gz and new.pb.gz) "
                "into a directory; give a directory name (-o hvprof-diff)\n",
                output);
        goto out;
    }
    const struct hv_file_role outs[] = {{"-o", to_dir ? NULL : output}};
    const struct hv_file_role ins[] = {{"the base recording", dopt.base_name},
                                       {"the new recording", dopt.new_name},
                                       {"--kernel-symbols", ksyms}};
    if (hv_check_outputs(outs, 1, ins, 3, &err) < 0) {
        fprintf(stderr, "hvprof diff: %s\n", err.msg);
        goto out;
    }
    status = 1;
    const struct report_input_opts in = {.cmd = "hvprof diff",
                                         .sp = &a.in.sp,
                                         .ksyms = ksyms,
                                         .filter = &filter,
                                         .quiet = quiet,
                                         .no_demangle = a.in.no_demangle,
                                         .debuginfod = a.in.debuginfod,
                                         .debuginfod_urls = a.in.debuginfod_urls};
    /* Both as one entry per distinct stack (docs/report.md, "Memory"), but for a --time window. */
    base.aggregate = new.aggregate = !filter.has_time;
    if (report_input_load(dopt.base_name, &in, &base) != 0 ||
        report_input_load(dopt.new_name, &in, &new) != 0)
        goto out;
    if (report_diff_build(&base, &new, &d, &err) < 0) {
        fprintf(stderr, "hvprof diff: %s\n", err.msg);
        goto out;
    }
    if (!to_dir) {
        struct diff_job j = {(enum diff_format)format, &d, &dopt};
        status = report_output_write(
            "hvprof diff", formats[format].name, false, AT_FDCWD, output,
            (quiet ? REPORT_OUT_QUIET : 0) | (force ? REPORT_OUT_FORCE : 0), write_diff, &j);
        goto out;
    }
    struct report_dir dir;
    if (report_dir_open(&dir, "hvprof diff", output ? output : "hvprof-diff",
                        (quiet ? REPORT_OUT_QUIET : 0) | (force ? REPORT_OUT_FORCE : 0)) != 0)
        goto out;
    status = 0;
    for (int f = 0; f < DIFF_NFORMATS && status == 0 && all; f++) {
        struct diff_job j = {(enum diff_format)f, &d, &dopt};
        status = report_dir_write(&dir, formats[f].name, false, formats[f].file, write_diff, &j);
    }
    if (status == 0)
        status = write_pprofs(&base, &new, &dir);
    report_dir_close(&dir);
out:
    report_diff_free(&d);
    profile_free(&base);
    profile_free(&new);
    symbol_path_free(&a.in.sp);
    return status;
}
