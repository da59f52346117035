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

static void diff_usage(FILE *out)
{
    fprintf(out,
            "usage: hvprof diff BASE.fxt NEW.fxt [options]\n\n"
            "Compare two recordings: what changed from BASE to NEW.\n\n"
            "output:\n"
            "  --format F        top (default: each function's self and children shares in\n"
            "                    both, and the change), folded (\"stack base new\" lines, as\n"
            "                    FlameGraph's difffolded.pl writes them), svg (NEW's flame graph,\n"
            "                    red where it has more than BASE, blue where less), pprof\n"
            "                    (base.pb.gz and new.pb.gz, functions named alike in both, for\n"
            "                    'pprof -diff_base=base.pb.gz new.pb.gz'), or all\n"
            "  -o, --output OUT  output file (default: standard output); with --format pprof\n"
            "                    or all a directory (default: hvprof-diff/)\n"
            "  --raw             counts as recorded; by default BASE's counts are scaled to\n"
            "                    NEW's total, so that a longer recording is no change\n"
            "  --title TEXT      title of the flame graph\n"
            "  --limit N         rows of the table (default 50)\n"
            "symbols (for both recordings):\n"
            "  --symbols DIR     search DIR for symbol files by build-id or name; repeatable\n"
            "  --vmlinux FILE, --kallsyms FILE, --system-map FILE, --kernel-symbols FILE\n"
            "                    the guest kernel's symbols\n"
            "filters (applied to both):\n"
            "  --vcpu N          samples of vCPU N only\n"
            "  --comm NAME       samples whose thread or process is named NAME\n"
            "  --user, --kernel  samples taken at CPL 3 / CPL 0 only\n"
            "  -q, --quiet       no progress or warnings on stderr\n"
        "  -f, --force       replace an existing output file (else refused; outputs are\n"
        "                    written as FILE.part, mode 0600, and renamed into place)\n"
            "  -h, --help        this text\n");
}

enum diff_format { DIFF_TOP, DIFF_FOLDED, DIFF_SVG, DIFF_NFORMATS, DIFF_PPROF = DIFF_NFORMATS };

static const struct {
    const char *name, *file;
    int (*write)(const struct report_diff *, const struct report_diff_opts *, FILE *,
                 struct hv_err *);
} formats[DIFF_NFORMATS] = {
    [DIFF_TOP] = {"top", "diff.txt", report_diff_write_top},
    [DIFF_FOLDED] = {"folded", "diff.folded", report_diff_write_folded},
    [DIFF_SVG] = {"svg", "diff.svg", report_diff_write_svg},
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

int cmd_diff(int argc, char **argv)
{
    enum {
        O_FORMAT = 256,
        O_TITLE,
        O_LIMIT,
        O_RAW,
        O_SYMBOLS,
        O_KSYMS,
        O_VCPU,
        O_COMM,
        O_USER,
        O_KERNEL
    };
    static const struct option opts[] = {
        {"format", required_argument, 0, O_FORMAT},
        {"output", required_argument, 0, 'o'},
        {"title", required_argument, 0, O_TITLE},
        {"limit", required_argument, 0, O_LIMIT},
        {"raw", no_argument, 0, O_RAW},
        REPORT_INPUT_OPTIONS,
        {"quiet", no_argument, 0, 'q'},
        {"force", no_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int format = DIFF_TOP;
    bool all = false, quiet = false, force = false;
    const char *output = NULL, *ksyms = NULL;
    struct report_diff_opts dopt = {0};
    struct prof_filter filter = {0};
    struct symbol_path sp;
    struct profile base, new;
    struct report_diff d = {0};
    struct hv_err err;
    int status = 2, c;
    uint64_t v;
    symbol_path_init(&sp);
    profile_init(&base);
    profile_init(&new);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:qfh", opts, NULL)) != -1) {
        switch (c) {
        case O_FORMAT:
            all = !strcmp(optarg, "all");
            format = -1;
            for (int f = 0; f < DIFF_NFORMATS && !all; f++)
                if (!strcmp(optarg, formats[f].name))
                    format = f;
            if (!strcmp(optarg, "pprof"))
                format = DIFF_PPROF;
            if (!all && format < 0) {
                fprintf(stderr,
                        "hvprof diff: --format %s: expected top, folded, svg, pprof or all\n",
                        optarg);
                goto out;
            }
            break;
        case 'o':
            output = optarg;
            break;
        case O_TITLE:
            dopt.title = optarg;
            break;
        case O_LIMIT:
            if (parse_uint(optarg, "--limit", 1, 1000000, &v, &err) < 0)
                goto bad_value;
            dopt.limit = (unsigned)v;
            break;
        case O_RAW:
            dopt.raw = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            diff_usage(stdout);
            status = 0;
            goto out;
        default:
            switch (report_input_option("hvprof diff", c, optarg, &sp, &ksyms, &filter)) {
            case 1:
                break;
            case 0:
                fprintf(stderr, "hvprof diff: unknown or incomplete option '%s' (try --help)\n",
                        argv[optind - 1]);
                /* fall through */
            default:
                goto out;
            }
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "hvprof diff: two recordings, BASE and NEW, are needed (%d given)\n",
                argc - optind < 0 ? 0 : argc - optind);
        diff_usage(stderr);
        goto out;
    }
    if (filter.user_only && filter.kernel_only) {
        fprintf(stderr, "hvprof diff: --user and --kernel exclude each other\n");
        goto out;
    }
    dopt.base_name = argv[optind];
    dopt.new_name = argv[optind + 1];
    bool to_dir = all || format == DIFF_PPROF;
    const struct hv_file_role outs[] = {{"-o", to_dir ? NULL : output}};
    const struct hv_file_role ins[] = {{"the base recording", dopt.base_name},
                                       {"the new recording", dopt.new_name},
                                       {"--kernel-symbols", ksyms}};
    if (hv_check_outputs(outs, 1, ins, 3, &err) < 0) {
        fprintf(stderr, "hvprof diff: %s\n", err.msg);
        goto out;
    }
    status = 1;
    const struct report_input_opts in = {
        .cmd = "hvprof diff", .sp = &sp, .ksyms = ksyms, .filter = &filter, .quiet = quiet};
    if (report_input_load(dopt.base_name, &in, &base) != 0 ||
        report_input_load(dopt.new_name, &in, &new) != 0)
        goto out;
    if (report_diff_build(&base, &new, &d, &err) < 0) {
        fprintf(stderr, "hvprof diff: %s\n", err.msg);
        goto out;
    }
    if (!to_dir) {
        struct diff_job j = {(enum diff_format)format, &d, &dopt};
        status = report_output_write("hvprof diff", formats[format].name, false, AT_FDCWD, output,
                                     (quiet ? REPORT_OUT_QUIET : 0) |
                                         (force ? REPORT_OUT_FORCE : 0),
                                     write_diff, &j);
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
    goto out;
bad_value:
    fprintf(stderr, "hvprof diff: %s\n", err.msg);
out:
    report_diff_free(&d);
    profile_free(&base);
    profile_free(&new);
    symbol_path_free(&sp);
    return status;
}
