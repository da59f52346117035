/* Man pages from the option tables (cli/options.h), as roff in the man(7) macros: hvprof(1) and
 * one hvprof-COMMAND(1) page per command, its options by group, its examples. `hvprof help
 * --man [COMMAND]` prints them; the build writes them into man/ and `cmake --install` puts
 * them in share/man/man1. */
#include "cli/man.h"

#include <string.h>

/* Text made safe for roff: a backslash as \e, '-' as \- (a real minus, as options are written),
 * and a line never starting with '.' or '\'' (a request) thanks to \&. */
static void roff_text(FILE *out, const char *s, bool line_start)
{
    for (; *s; s++) {
        if (line_start && (*s == '.' || *s == '\''))
            fputs("\\&", out);
        line_start = false;
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else if (*s == '\n') {
            fputc('\n', out);
            line_start = true;
        } else
            fputc(*s, out);
    }
}

static void upper(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s >= 'a' && *s <= 'z' ? *s - 32 : *s, out);
}

void cli_man_command(FILE *out, const struct cli_command *cmd, const char *summary,
                     const char *version)
{
    fputs(".TH HVPROF-", out);
    upper(out, cmd->name);
    fprintf(out, " 1 \"\" \"hvprof %s\" \"hvprof manual\"\n.SH NAME\nhvprof\\-%s \\- ", version,
            cmd->name);
    roff_text(out, summary, false);
    fprintf(out, "\n.SH SYNOPSIS\n.B hvprof %s\n", cmd->name);
    roff_text(out, cmd->synopsis, false);
    fputs("\n.SH DESCRIPTION\n", out);
    roff_text(out, cmd->about, true);
    fputc('\n', out);
    for (size_t g = 0; g < cmd->ngroups; g++) {
        fputs(".SH ", out);
        upper(out, cmd->groups[g]->title);
        fputc('\n', out);
        for (size_t i = 0; i < cmd->groups[g]->n; i++) {
            const struct cli_option *o = &cmd->groups[g]->v[i];
            fputs(".TP\n.B ", out);
            if (o->letter)
                fprintf(out, "\\-%c, ", o->letter);
            fputs("\\-\\-", out);
            roff_text(out, o->name, false);
            if (o->value) {
                fputs(o->value[0] == '[' ? "\\fI" : " \\fI", out);
                roff_text(out, o->value, false);
                fputs("\\fR", out);
            }
            fputc('\n', out);
            roff_text(out, o->help ? o->help : "", true);
            fputc('\n', out);
        }
    }
    if (cmd->examples) {
        fputs(".SH EXAMPLES\n.nf\n", out);
        roff_text(out, cmd->examples, true);
        fputs("\n.fi\n", out);
    }
    fputs(".SH SEE ALSO\n.BR hvprof (1)\n", out);
}

void cli_man_main(FILE *out, const struct cli_command *const *cmds, const char *const *summaries,
                  size_t n, const char *version)
{
    fprintf(out,
            ".TH HVPROF 1 \"\" \"hvprof %s\" \"hvprof manual\"\n.SH NAME\nhvprof \\- sample "
            "unmodified virtual-machine guests from the hypervisor\n.SH SYNOPSIS\n.B hvprof\n"
            "\\fICOMMAND\\fR [\\fIoptions\\fR]\n.SH DESCRIPTION\nhvprof boots a guest under its "
            "own KVM VMM and samples it from the hypervisor: per-vCPU timer exits, the guest's "
            "stacks walked through its own page tables, names read from its memory, FXT "
            "recordings that \\fBhvprof report\\fR turns into tables, flame graphs, pprof and "
            "perf-script.\n.SH COMMANDS\n",
            version);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, ".TP\n.BR hvprof\\-%s (1)\n", cmds[i]->name);
        roff_text(out, summaries[i], true);
        fputc('\n', out);
    }
    fputs(".SH SEE ALSO\n", out);
    for (size_t i = 0; i < n; i++)
        fprintf(out, ".BR hvprof\\-%s (1)%s\n", cmds[i]->name, i + 1 < n ? "," : "");
}
