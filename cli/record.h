/* `hvprof record` as a function, for tools built on it (tests/tools/capture/: the test bed's
 * capture of guest memory). The product's `hvprof record` is record_main without hooks. */
#pragma once

#include "guestwalk/gmem.h"

struct record_hooks {
    /* After the recording is finished and before the VM is destroyed: the guest has stopped and
     * its memory is still there. */
    void (*guest_stopped)(void *ctx, const struct gmem *mem);
    /* Once the command is confined, before the guest runs: the tool's own threads start here
     * (no thread may exist before confinement; sandbox/sandbox.h). */
    void (*confined)(void *ctx);
    void *ctx;
};

/* `hvprof record` with argv as the command sees it (argv[0] = "record"); returns its exit
 * status. `tool` may be NULL. */
int record_main(int argc, char **argv, const struct record_hooks *tool);
