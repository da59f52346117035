/* Placeholder until the owning module lands; replaced by the real command. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "hvprof run: not built yet\n");
    return 1;
}
