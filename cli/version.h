/* hvprof --version: version, commit, build options, library versions. */
#pragma once

#include <stdio.h>

void cli_print_version(FILE *out);
