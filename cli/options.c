/* The command-line option tables (options.h): getopt_long's arrays from them, the usage text
 * and the markdown lists. */
#include "cli/options.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_OPTIONS 128
#define HELP_COLUMN_MAX 26 /* an option wider than this puts its help on the next line */

static size_t count(const struct cli_command *cmd)
{
    size_t n = 0;
    for (size_t g = 0; g < cmd->ngroups; g++)
        n += cmd->groups[g]->n;
    return n;
}

/* "-o, --output FILE" or "--hz N". */
static int spec(const struct cli_option *o, char *buf, size_t len)
{
    int n = 0;
    if (o->letter)
        n = snprintf(buf, len, "-%c, ", o->letter);
    /* An optional value is written as getopt takes it: "--debuginfod[=URLS]". */
    bool optional = o->value && o->value[0] == '[';
    return n + snprintf(buf + n, len - (size_t)n, "--%s%s%s", o->name,
                        o->value && !optional ? " " : "", o->value ? o->value : "");
}

static const char *help_of(const struct cli_option *o)
{
    return o->help ? o->help : "";
}

static int column(const struct cli_command *cmd)
{
    int col = (int)strlen("-h, --help");
    char buf[128];
    for (size_t g = 0; g < cmd->ngroups; g++)
        for (size_t i = 0; i < cmd->groups[g]->n; i++) {
            int w = spec(&cmd->groups[g]->v[i], buf, sizeof(buf));
            if (w <= HELP_COLUMN_MAX && w > col)
                col = w;
        }
    return col;
}

static void usage_row(FILE *out, const char *left, const char *help, int col)
{
    int w = fprintf(out, "  %s", left) - 2;
    const char *line = help;
    if (w > col) {
        fputc('\n', out);
        w = -2;
    }
    for (bool first = true; line && *line; first = false) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(out, "%*s%.*s\n", first ? col - w + 2 : col + 4, "", len, line);
        line = nl ? nl + 1 : NULL;
    }
}

void cli_usage(FILE *out, const struct cli_command *cmd)
{
    fprintf(out, "usage: hvprof %s %s\n\n%s\n", cmd->name, cmd->synopsis, cmd->about);
    int col = column(cmd);
    char buf[128];
    for (size_t g = 0; g < cmd->ngroups; g++) {
        fprintf(out, "\n%s:\n", cmd->groups[g]->title);
        for (size_t i = 0; i < cmd->groups[g]->n; i++) {
            spec(&cmd->groups[g]->v[i], buf, sizeof(buf));
            usage_row(out, buf, help_of(&cmd->groups[g]->v[i]), col);
        }
    }
    fputc('\n', out);
    usage_row(out, "-h, --help", "this text", col);
    if (cmd->examples) {
        fputs("\nexamples:\n", out);
        for (const char *l = cmd->examples; *l;) {
            size_t n = strcspn(l, "\n");
            fprintf(out, "  %.*s\n", (int)n, l);
            l += n + (l[n] == '\n');
        }
    }
}

/* Markdown cells: a row's help on one line, '|' escaped. */
static void md_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n')
            fputc(' ', out);
        else if (*s == '|')
            fputs("\\|", out);
        else
            fputc(*s, out);
    }
}

void cli_markdown(FILE *out, const struct cli_command *cmd)
{
    fprintf(out, "## hvprof %s\n\n`hvprof %s %s`\n\n", cmd->name, cmd->name, cmd->synopsis);
    md_text(out, cmd->about);
    fputs("\n", out);
    char buf[128];
    for (size_t g = 0; g < cmd->ngroups; g++) {
        fprintf(out, "\n### %s\n\n| option | what it does |\n| --- | --- |\n",
                cmd->groups[g]->title);
        for (size_t i = 0; i < cmd->groups[g]->n; i++) {
            spec(&cmd->groups[g]->v[i], buf, sizeof(buf));
            fputs("| `", out);
            md_text(out, buf);
            fputs("` | ", out);
            md_text(out, help_of(&cmd->groups[g]->v[i]));
            fputs(" |\n", out);
        }
    }
    if (cmd->examples)
        fprintf(out, "\n### examples\n\n```\n%s\n```\n", cmd->examples);
    fputs("\n", out);
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv, cli_handler fn, void *ctx)
{
    size_t n = count(cmd);
    if (n + 2 > CLI_MAX_OPTIONS) {
        fprintf(stderr, "hvprof %s: %zu options: more than the parser's %d\n", cmd->name, n,
                CLI_MAX_OPTIONS - 2);
        return 2;
    }
    struct option longopts[CLI_MAX_OPTIONS];
    char shortopts[2 * CLI_MAX_OPTIONS + 4] = ":h";
    size_t k = 0, s = strlen(shortopts);
    for (size_t g = 0; g < cmd->ngroups; g++)
        for (size_t i = 0; i < cmd->groups[g]->n; i++) {
            const struct cli_option *o = &cmd->groups[g]->v[i];
            longopts[k++] = (struct option){
                o->name,
                o->value ? (o->value[0] == '[' ? optional_argument : required_argument)
                         : no_argument,
                NULL, o->id};
            if (o->letter) {
                shortopts[s++] = o->letter;
                if (o->value)
                    shortopts[s++] = ':';
            }
        }
    longopts[k++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[k] = (struct option){0};
    shortopts[s] = 0;
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (opt == 'h') {
            cli_usage(stdout, cmd);
            return 1;
        }
        if (opt == '?') {
            fprintf(stderr, "hvprof %s: unknown option '%s' (try 'hvprof %s --help')\n", cmd->name,
                    argv[optind - 1], cmd->name);
            return 2;
        }
        if (opt == ':') {
            fprintf(stderr, "hvprof %s: option '%s' needs a value\n", cmd->name, argv[optind - 1]);
            return 2;
        }
        struct hv_err err = {0};
        int r = fn(ctx, opt, optarg, &err);
        if (r < 0) {
            fprintf(stderr, "hvprof %s: %s\n", cmd->name, err.msg);
            return 2;
        }
        if (r == 0) {
            fprintf(stderr,
                    "hvprof %s: option '%s' is not handled (a bug: its table row has no "
                    "case)\n",
                    cmd->name, argv[optind - 1]);
            return 2;
        }
    }
    return 0;
}
