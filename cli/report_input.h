/* What `hvprof report` and `hvprof diff` share: a recording read, filtered and symbolized with
 * the user's symbol options and its warnings said, and one output written to a file or stdout
 * without ever leaving a cut file behind. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "cli/options.h"
#include "common/err.h"
#include "report/profile.h"
#include "symbolize/symbol_path.h"

struct report_input_opts {
    const char *cmd;                  /* "hvprof report": the messages' prefix */
    struct symbol_path *sp;           /* --symbols; the recording's own hint is added to it */
    const char *ksyms;                /* --vmlinux, --kallsyms, --system-map, --kernel-symbols */
    const struct prof_filter *filter; /* NULL: every sample */
    bool want_lines;                  /* source lines (pprof's -list) */
    bool no_demangle;                 /* --no-demangle: names as the symbol files hold them */
    /* debuginfod (symbolize/debuginfod.h): 0 when $DEBUGINFOD_URLS is set, 1 --debuginfod
     * (with its URLs, or the variable's), -1 --no-debuginfod */
    int debuginfod;
    const char *debuginfod_urls;
    bool quiet; /* no progress, no warnings */
};

/* The options `report` and `diff` share: where symbols come from and the filters that mean the
 * same in any recording, as rows of their option tables (cli/options.h);
 * report_input_option handles them. */
enum {
    REPORT_INPUT_OPT_SYMBOLS = 0x300,
    REPORT_INPUT_OPT_KSYMS,
    REPORT_INPUT_OPT_NO_DEMANGLE,
    REPORT_INPUT_OPT_DEBUGINFOD,
    REPORT_INPUT_OPT_NO_DEBUGINFOD,
    REPORT_INPUT_OPT_VCPU = 'C', /* perf's -C/--cpu: the guest's CPUs are its vCPUs */
    REPORT_INPUT_OPT_COMM = 0x310,
    REPORT_INPUT_OPT_PID,
    REPORT_INPUT_OPT_TID,
    REPORT_INPUT_OPT_TIME,
    REPORT_INPUT_OPT_USER,
    REPORT_INPUT_OPT_KERNEL,
    REPORT_INPUT_OPT_CGROUP,
    REPORT_INPUT_OPT_CONTAINER,
};
/* Where symbols come from: a group of its own. */
extern const struct cli_group report_input_symbols_group;
/* The shared filters: a group of their own (docs/report.md, "Filters"). */
extern const struct cli_group report_input_filter_group;

/* The rows of the output options `report` and `diff` share (their ids the letters). */
#define REPORT_INPUT_OUTPUT_OPTIONS                                                                \
    {'q', "quiet", 'q', NULL, "no progress or warnings on stderr"},                                \
    {                                                                                              \
        'f', "force", 'f', NULL,                                                                   \
            "replace an existing output file (else refused; outputs are\n"                         \
            "written as FILE.part, mode 0600, and renamed into place)"                             \
    }

/* What the shared options set. */
struct report_input_args {
    struct symbol_path sp;
    const char *ksyms;
    struct prof_filter filter;
    bool no_demangle;
    int debuginfod;
    const char *debuginfod_urls;
};
/* 1: `opt` was one of the shared options, applied; 0: not one of them; -1: a bad value (err). */
int report_input_option(int opt, const char *arg, struct report_input_args *a, struct hv_err *err);

/* Load `file` into `p` (initialized), then filter and symbolize it. 0, or 1 after printing the
 * error. */
int report_input_load(const char *file, const struct report_input_opts *o, struct profile *p);

typedef int (*report_output_fn)(void *ctx, FILE *out, struct hv_err *err);

/* One output to `path` (NULL or "-": stdout), a file made in `dirfd` (AT_FDCWD, or the
 * directory of --format all) as common/output.h makes outputs: written as NAME.part and renamed
 * into place when whole, an existing file replaced only with REPORT_OUT_FORCE, a symbolic link
 * never followed. A file that could not be written whole leaves NAME as it was; a binary one is
 * never written to a terminal; a reader that closed the pipe on stdout (`| head`) ends the command
 * quietly. Returns the exit status: 0, 1 (write error) or 2 (binary to a terminal). */
#define REPORT_OUT_QUIET 1u /* no "wrote FILE" */
#define REPORT_OUT_FORCE 2u /* --force: replace an existing file (common/output.h) */
int report_output_write(const char *cmd, const char *format_name, bool binary, int dirfd,
                        const char *path, unsigned flags, report_output_fn write, void *ctx);

/* --format all's directory: every output a file in it, each said ("wrote DIR/FILE") unless
 * quiet. */
struct report_dir {
    const char *cmd, *name;
    int fd;
    size_t len; /* the name without trailing slashes: "report/" says "report/top.txt" */
    bool quiet, force;
};
/* Create `name` if missing and open it (flags: REPORT_OUT_*). 0, or 1 after printing the
 * error. */
int report_dir_open(struct report_dir *d, const char *cmd, const char *name, unsigned flags);
/* report_output_write into the directory; its exit status. */
int report_dir_write(const struct report_dir *d, const char *format_name, bool binary,
                     const char *file, report_output_fn write, void *ctx);
void report_dir_close(struct report_dir *d);
