/* Shell completion from the option tables: `hvprof help --completion bash|zsh` prints a script
 * that completes the commands, each command's options, and the values of those with a fixed set
 * (--format, --sort, --mode ...) or a file; `cmake --install` puts them where bash-completion
 * and zsh look. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "cli/options.h"

/* The values an option of `cmd` takes, space-separated, or NULL (any; a file when its value
 * is FILE, DIR or OUT). */
typedef const char *(*cli_choices_fn)(const char *cmd, const char *option);

void cli_completion_bash(FILE *out, const struct cli_command *const *cmds, size_t n,
                         cli_choices_fn choices);
void cli_completion_zsh(FILE *out, const struct cli_command *const *cmds,
                        const char *const *summaries, size_t n, cli_choices_fn choices);
