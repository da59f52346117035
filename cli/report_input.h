/* What `hvprof report` and `hvprof diff` share: a recording read, filtered and symbolized with
 * the user's symbol options and its warnings said, and one output written to a file or stdout
 * without ever leaving a cut file behind. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"
#include "report/profile.h"
#include "symbols/symbol_path.h"

struct report_input_opts {
    const char *cmd;                  /* "hvprof report": the messages' prefix */
    struct symbol_path *sp;           /* --symbols; the recording's own hint is added to it */
    const char *ksyms;                /* --vmlinux, --kallsyms, --system-map, --kernel-symbols */
    const struct prof_filter *filter; /* NULL: every sample */
    bool want_lines;                  /* source lines (pprof's -list) */
    bool quiet;                       /* no progress, no warnings */
};

/* Load `file` into `p` (initialized), then filter and symbolize it. 0, or 1 after printing the
 * error. */
int report_input_load(const char *file, const struct report_input_opts *o, struct profile *p);

typedef int (*report_output_fn)(void *ctx, FILE *out, struct hv_err *err);

/* One output to `path` (NULL or "-": stdout), a file created in `dirfd` (AT_FDCWD, or the
 * directory of --format all, where a symbolic link planted by someone else is refused). A file
 * that could not be written whole is removed, never left empty or cut; a binary one is never
 * written to a terminal; a reader that closed the pipe on stdout (`| head`) ends the command
 * quietly. Returns the exit status: 0, 1 (write error) or 2 (binary to a terminal). */
int report_output_write(const char *cmd, const char *format_name, bool binary, int dirfd,
                        const char *path, bool quiet, report_output_fn write, void *ctx);
