/* Bash and zsh completion scripts written from the option tables (cli/completion.h). Nothing is
 * listed by hand: a new option completes as soon as its table row exists. */
#include "cli/completion.h"

#include <stdbool.h>
#include <string.h>

static bool takes_file(const struct cli_option *o)
{
    return o->value && (!strcmp(o->value, "FILE") || !strcmp(o->value, "OUT") ||
                        !strcmp(o->value, "DIR") || !strncmp(o->value, "FILE[", 5));
}

/* The command's option words (--name and -l), of all options or of those taking a value. */
static void words_of(FILE *out, const struct cli_command *cmd, bool with_value)
{
    for (size_t g = 0; g < cmd->ngroups; g++)
        for (size_t i = 0; i < cmd->groups[g]->n; i++) {
            const struct cli_option *o = &cmd->groups[g]->v[i];
            if (with_value && (!o->value || o->value[0] == '['))
                continue;
            fprintf(out, " --%s", o->name);
            if (o->letter)
                fprintf(out, " -%c", o->letter);
        }
}

void cli_completion_bash(FILE *out, const struct cli_command *const *cmds, size_t n,
                         cli_choices_fn choices)
{
    fputs("# bash completion for hvprof, generated from its option tables (hvprof help "
          "--completion bash).\n_hvprof() {\n"
          "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "  COMPREPLY=()\n  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "    COMPREPLY=($(compgen -W \"",
          out);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s ", cmds[i]->name);
    fputs("help --help --version\" -- \"$cur\"))\n    return\n  fi\n"
          "  if [ \"${COMP_WORDS[1]}\" = help ]; then\n    COMPREPLY=($(compgen -W \"",
          out);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s ", cmds[i]->name);
    fputs("--man --markdown --completion\" -- \"$cur\"))\n    return\n  fi\n"
          "  local opts='' valued='' files=''\n  case ${COMP_WORDS[1]} in\n",
          out);
    for (size_t c = 0; c < n; c++) {
        const struct cli_command *cmd = cmds[c];
        fprintf(out, "  %s)\n    opts='--help", cmd->name);
        words_of(out, cmd, false);
        fputs("'\n    valued='", out);
        words_of(out, cmd, true);
        fputs("'\n    files='", out);
        for (size_t g = 0; g < cmd->ngroups; g++)
            for (size_t i = 0; i < cmd->groups[g]->n; i++) {
                const struct cli_option *o = &cmd->groups[g]->v[i];
                if (takes_file(o)) {
                    fprintf(out, " --%s", o->name);
                    if (o->letter)
                        fprintf(out, " -%c", o->letter);
                }
            }
        fputs("'\n    case $prev in\n", out);
        for (size_t g = 0; g < cmd->ngroups; g++)
            for (size_t i = 0; i < cmd->groups[g]->n; i++) {
                const struct cli_option *o = &cmd->groups[g]->v[i];
                const char *set = o->value ? choices(cmd->name, o->name) : NULL;
                if (!set)
                    continue;
                fprintf(out, "    --%s", o->name);
                if (o->letter)
                    fprintf(out, "|-%c", o->letter);
                fprintf(out, ") COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;\n", set);
            }
        fputs("    esac\n    ;;\n", out);
    }
    fputs("  esac\n"
          "  case \" $files \" in *\" $prev \"*) COMPREPLY=($(compgen -f -- \"$cur\")); return ;; "
          "esac\n"
          "  case \" $valued \" in *\" $prev \"*) return ;; esac\n"
          "  if [[ $cur == -* ]]; then\n    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "  else\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\n"
          "complete -o filenames -F _hvprof hvprof\n",
          out);
}

/* Text for inside an _arguments spec's [...]: its first line, brackets, colons and quotes
 * made harmless. */
static void zsh_desc(FILE *out, const char *s)
{
    for (; *s && *s != '\n'; s++) {
        if (*s == '[')
            fputc('(', out);
        else if (*s == ']')
            fputc(')', out);
        else if (*s == ':')
            fputs("\\:", out);
        else if (*s == '\'')
            fputs("'\\''", out);
        else
            fputc(*s, out);
    }
}

void cli_completion_zsh(FILE *out, const struct cli_command *const *cmds,
                        const char *const *summaries, size_t n, cli_choices_fn choices)
{
    fputs("#compdef hvprof\n# zsh completion for hvprof, generated from its option tables (hvprof "
          "help --completion zsh).\n_hvprof() {\n  local -a cmds\n  cmds=(\n",
          out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "    '%s:", cmds[i]->name);
        zsh_desc(out, summaries[i]);
        fputs("'\n", out);
    }
    fputs("  )\n  if (( CURRENT == 2 )); then\n    _describe 'command' cmds\n    return\n  fi\n"
          "  local cmd=$words[2]\n  shift words\n  (( CURRENT-- ))\n  case $cmd in\n",
          out);
    for (size_t c = 0; c < n; c++) {
        const struct cli_command *cmd = cmds[c];
        fprintf(out, "  %s)\n    _arguments -s \\\n", cmd->name);
        for (size_t g = 0; g < cmd->ngroups; g++)
            for (size_t i = 0; i < cmd->groups[g]->n; i++) {
                const struct cli_option *o = &cmd->groups[g]->v[i];
                fputs("      '", out);
                if (o->letter)
                    fprintf(out, "(-%c --%s)'{-%c,--%s}'", o->letter, o->name, o->letter, o->name);
                else
                    fprintf(out, "--%s", o->name);
                fputc('[', out);
                zsh_desc(out, o->help ? o->help : "");
                fputc(']', out);
                if (o->value) {
                    const char *set = choices(cmd->name, o->name);
                    fputc(':', out);
                    zsh_desc(out, o->value);
                    if (set)
                        fprintf(out, ":(%s)", set);
                    else if (takes_file(o))
                        fputs(":_files", out);
                    else
                        fputs(": ", out);
                }
                fputs("' \\\n", out);
            }
        fputs("      '*:file:_files'\n    ;;\n", out);
    }
    fputs("  esac\n}\n_hvprof \"$@\"\n", out);
}
