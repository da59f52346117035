/* hvprof: sample unmodified virtual-machine guests from the hypervisor. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"

struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"run", cmd_run, "boot a guest (the built-in demo guest, an ELF64 kernel or a Linux bzImage)"},
    {"record", cmd_record, "boot a guest under sampling and write an FXT recording"},
    {"report", cmd_report,
     "symbolize a recording: top table, flame graph, pprof, perf script, ..."},
    {"top", cmd_top, "boot a guest under sampling and show its hottest functions live"},
    {"diff", cmd_diff, "compare two recordings: changes per function, differential flame graph"},
    {"dump", cmd_dump, "print the records of an FXT file, or --stats"},
};

/* docs/options.md: every command's options from their tables (test_options_doc compares). */
static void markdown(FILE *out)
{
    fprintf(out, "# Command-line options\n\n"
                 "Generated from the option tables (cli/options.h) by `hvprof help --markdown`;\n"
                 "`test_options_doc` checks that this file is what the build prints.\n\n");
    const struct cli_command *cmds[] = {&cli_run,    &cli_record, cli_top(),
                                        &cli_report, &cli_diff,   &cli_dump};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        cli_markdown(out, cmds[i]);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: hvprof <command> [options]\n\n"
                 "hvprof samples unmodified KVM guests from the hypervisor: per-vCPU timer exits,\n"
                 "guest stacks walked through the guest's own page tables, FXT recordings.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out,
            "\n'hvprof <command> --help' describes each command; 'hvprof help --markdown' lists\n"
            "every option (docs/options.md). 'hvprof --version' prints the version.\n");
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
    if (!strcmp(name, "help") && argc == 3 && !strcmp(argv[2], "--markdown")) {
        markdown(stdout);
        return 0;
    }
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
        printf("hvprof %s\n", HVPROF_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
        if (!strcmp(name, subcommands[i].name))
            return subcommands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "hvprof: unknown command '%s' (try 'hvprof --help')\n", name);
    return 2;
}
