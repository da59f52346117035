/* hvprof: sample unmodified virtual-machine guests from the hypervisor. The commands' table,
 * and what is asked of the program as a whole: its help (of one command too), its version,
 * and what is written from the option tables: docs/options.md, the man pages, completion. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "build_info.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/man.h"
#include "cli/options.h"
#include "cli/version.h"
#include "report/report.h"
#include "report/report_sort.h"

struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
    const struct cli_command *(*options)(void);
    const char *summary;
};

static const struct cli_command *run_cmd(void)
{
    return &cli_run;
}
static const struct cli_command *record_cmd(void)
{
    return &cli_record;
}
static const struct cli_command *report_cmd(void)
{
    return &cli_report;
}
static const struct cli_command *diff_cmd(void)
{
    return &cli_diff;
}
static const struct cli_command *dump_cmd(void)
{
    return &cli_dump;
}

static const struct subcommand subcommands[] = {
    {"run", cmd_run, run_cmd,
     "boot a guest (the built-in demo guest, an ELF64 kernel or a Linux bzImage)"},
    {"record", cmd_record, record_cmd, "boot a guest under sampling and write an FXT recording"},
    {"top", cmd_top, cli_top, "boot a guest under sampling and show its hottest functions live"},
    {"report", cmd_report, report_cmd,
     "symbolize a recording: top table, flame graph, pprof, perf script, ..."},
    {"diff", cmd_diff, diff_cmd,
     "compare two recordings: changes per function, differential flame graph"},
    {"dump", cmd_dump, dump_cmd, "print the records of an FXT file, or --stats"},
};
#define NCMDS (sizeof(subcommands) / sizeof(subcommands[0]))

static const struct subcommand *find(const char *name)
{
    for (size_t i = 0; i < NCMDS; i++)
        if (!strcmp(name, subcommands[i].name))
            return &subcommands[i];
    return NULL;
}

/* docs/options.md: every command's options from their tables (test_options_doc compares). */
static void markdown(FILE *out)
{
    fprintf(out, "# Command-line options\n\n"
                 "Generated from the option tables (cli/options.h) by `hvprof help --markdown`;\n"
                 "`test_options_doc` checks that this file is what the build prints.\n\n");
    for (size_t i = 0; i < NCMDS; i++)
        cli_markdown(out, subcommands[i].options());
}

/* The options whose values are a fixed set, for completion. */
static const char *choices(const char *cmd, const char *option)
{
    static char formats[256], keys[128];
    if (!strcmp(option, "format") && !strcmp(cmd, "report")) {
        snprintf(formats, sizeof(formats), "%s all", report_format_list());
        for (char *c = formats; *c; c++)
            if (*c == ',')
                *c = ' ';
        return formats;
    }
    if (!strcmp(option, "format") && !strcmp(cmd, "diff"))
        return "top tree folded svg json pprof all";
    if (!strcmp(option, "sort")) {
        snprintf(keys, sizeof(keys), "%s", report_sort_key_list());
        for (char *c = keys; *c; c++)
            if (*c == ',')
                *c = ' ';
        return keys;
    }
    if (!strcmp(option, "mode"))
        return "cpu wall exits";
    if (!strcmp(option, "guest"))
        return "demo";
    if (!strcmp(option, "guest-os"))
        return "auto linux generic";
    if (!strcmp(option, "events"))
        return "exits";
    if (!strcmp(option, "widths"))
        return "union new base";
    return NULL;
}

static int generated(int argc, char **argv)
{
    const struct cli_command *cmds[NCMDS];
    const char *summaries[NCMDS];
    for (size_t i = 0; i < NCMDS; i++) {
        cmds[i] = subcommands[i].options();
        summaries[i] = subcommands[i].summary;
    }
    if (!strcmp(argv[2], "--markdown") && argc == 3) {
        markdown(stdout);
        return 0;
    }
    if (!strcmp(argv[2], "--man") && argc <= 4) {
        if (argc == 3) {
            cli_man_main(stdout, cmds, summaries, NCMDS, HVPROF_VERSION);
            return 0;
        }
        const struct subcommand *c = find(argv[3]);
        if (!c) {
            fprintf(stderr, "hvprof help --man: unknown command '%s'\n", argv[3]);
            return 2;
        }
        cli_man_command(stdout, c->options(), c->summary, HVPROF_VERSION);
        return 0;
    }
    if (!strcmp(argv[2], "--completion") && argc == 4 && !strcmp(argv[3], "bash")) {
        cli_completion_bash(stdout, cmds, NCMDS, choices);
        return 0;
    }
    if (!strcmp(argv[2], "--completion") && argc == 4 && !strcmp(argv[3], "zsh")) {
        cli_completion_zsh(stdout, cmds, summaries, NCMDS, choices);
        return 0;
    }
    return -1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: hvprof <command> [options]\n\n"
                 "hvprof samples unmodified KVM guests from the hypervisor: per-vCPU timer exits,\n"
                 "guest stacks walked through the guest's own page tables, FXT recordings.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < NCMDS; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out,
            "\n'hvprof help COMMAND' (or 'hvprof COMMAND --help') describes each command;\n"
            "'hvprof help --markdown' lists every option (docs/options.md), '--man [COMMAND]'\n"
            "prints a man page, '--completion bash|zsh' a completion script;\n"
            "'hvprof --version' prints the version, commit and libraries.\n\n"
            "examples:\n"
            "  hvprof record --guest demo -o demo.fxt      # record the built-in demo guest\n"
            "  hvprof report demo.fxt                      # its hottest functions\n"
            "  hvprof report demo.fxt --format svg -o flame.svg\n");
}

int main(int argc, char **argv)
{
    /* A full disk or RLIMIT_FSIZE (SIGXFSZ) and a closed pipe (SIGPIPE) are write errors that
     * each command reports with the file's name, never a silent death (docs/reliability.md). */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    bool help = !strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h");
    if (help && argc >= 3 && argv[2][0] == '-') {
        int rc = generated(argc, argv);
        if (rc >= 0)
            return rc;
        fprintf(stderr, "hvprof help: expected COMMAND, --markdown, --man [COMMAND] or "
                        "--completion bash|zsh\n");
        return 2;
    }
    if (help && argc == 3) {
        const struct subcommand *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "hvprof help: unknown command '%s' (try 'hvprof --help')\n", argv[2]);
            return 2;
        }
        cli_usage(stdout, c->options());
        return 0;
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V") || !strcmp(name, "version")) {
        cli_print_version(stdout);
        return 0;
    }
    const struct subcommand *c = find(name);
    if (c)
        return c->fn(argc - 1, argv + 1);
    fprintf(stderr, "hvprof: unknown command '%s' (try 'hvprof --help')\n", name);
    return 2;
}
