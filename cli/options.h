/* One table per command-line option, as perf's __record_options[]: each option is one row
 * (its long name, short letter, value, help text and the id its command's handler switches
 * on), and from the tables come getopt_long's arrays, the usage text of `--help`, and the
 * option lists of docs/options.md (`hvprof help --markdown`, checked by test_options_doc). A
 * command's groups: its own options and the shared ones (cli/run_opts.h's guest options,
 * cli/report_input.h's symbol options).
 *
 *   static const struct cli_option record_options[] = {
 *       {OPT_HZ, "hz", 0, "N", "samples per second per vCPU, e.g. 1000, 4kHz (default 1000)"},
 *       ...};
 *   static const struct cli_group sampling = CLI_GROUP("sampling options", record_options);
 *   static const struct cli_group *const groups[] = {&sampling, &run_opts_group};
 *   const struct cli_command cmd = {"record", "-o FILE [options] ...", "Boot a guest ...",
 *                                   groups, 2};
 *   int rc = cli_parse(&cmd, argc, argv, handle, ctx);  // 0 parsed, 1 --help shown, 2 usage
 *   ... argv[optind..] are the positional arguments ...
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"

/* id of a short option is its letter; a long-only one's is a command's enum value >= 0x100. */
struct cli_option {
    int id;
    const char *name;  /* long name, without the dashes */
    char letter;       /* its short form, 0: none */
    /* its value's name in the usage ("N", "FILE"), NULL: takes none; "[=URLS]": an optional
     * value, given as --name=URLS (the handler's arg is NULL without one) */
    const char *value;
    /* What it does, lines separated by '\n' (the first beside the option in --help); where it
     * names the entries of another table (the report formats), a buffer built from that table
     * when the program starts. */
    const char *help;
};

struct cli_group {
    const char *title; /* "sampling options" */
    const struct cli_option *v;
    size_t n;
};
#define CLI_GROUP(title, table)                                                                    \
    {                                                                                              \
        title, table, sizeof(table) / sizeof(table[0])                                             \
    }

struct cli_command {
    const char *name;     /* "record" */
    const char *synopsis; /* after "usage: hvprof record " */
    const char *about;    /* paragraphs before the options */
    const struct cli_group *const *groups;
    size_t ngroups;
    /* Three or so example command lines, '\n' between them, each "COMMAND LINE  # what it
     * does": the end of --help, the man page's EXAMPLES. */
    const char *examples;
};

/* An option for the command's handler: 1 consumed, -1 a bad value (err says why, the parser
 * prints "hvprof NAME: <err>"), 0 not the handler's (reported as unknown). */
typedef int (*cli_handler)(void *ctx, int id, const char *arg, struct hv_err *err);

/* Parse argv[1..] (argv[0] is the command's name) against the command's groups, options
 * anywhere (getopt_long's permutation): each to `fn`. -h/--help prints the usage on stdout.
 * Returns 0 (positional arguments from argv[optind]), 1 after --help (exit 0), 2 after a
 * usage error it printed (exit 2). */
int cli_parse(const struct cli_command *cmd, int argc, char **argv, cli_handler fn, void *ctx);

/* The command's usage text (`--help`). */
void cli_usage(FILE *out, const struct cli_command *cmd);
/* Its options as markdown (docs/options.md): a section per command, a table per group. */
void cli_markdown(FILE *out, const struct cli_command *cmd);
