/* hvprof subcommands. Each takes the arguments after the subcommand name (argv[0] is the
 * subcommand itself, as for getopt_long) and returns the process exit status. */
#pragma once

int cmd_run(int argc, char **argv);    /* cli/cmd_run.c: boot a guest (vmm/) */
int cmd_record(int argc, char **argv); /* cli/cmd_record.c: boot under sampling (sampler/) */
int cmd_report(int argc, char **argv); /* cli/cmd_report.c: symbolize + formats (report/) */
int cmd_top(int argc, char **argv);    /* cli/cmd_top.c: record with a live table (report/) */
int cmd_diff(int argc, char **argv);   /* cli/cmd_diff.c: two recordings compared (report/) */
int cmd_dump(int argc, char **argv);   /* cli/cmd_dump.c: print an FXT file (fxt/) */

/* Each command's options, one table (cli/options.h): its --help and docs/options.md
 * (`hvprof help --markdown`). top's groups are its own and record's. */
struct cli_command;
extern const struct cli_command cli_run, cli_record, cli_report, cli_diff, cli_dump;
const struct cli_command *cli_top(void);
