/* Placeholder until the owning module lands; replaced by the real command. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "hvprof report: not built yet\n");
    return 1;
}
