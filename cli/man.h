/* Man pages (roff, man(7)) from the option tables: one per command and the main page. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/options.h"

void cli_man_command(FILE *out, const struct cli_command *cmd, const char *summary,
                     const char *version);
void cli_man_main(FILE *out, const struct cli_command *const *cmds, const char *const *summaries,
                  size_t n, const char *version);
