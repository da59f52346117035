/* hvprof-capture: `hvprof record` that, once the guest has stopped, captures the pages of guest
 * memory the Linux layer reads into $HVPROF_CAPTURE_GUEST (capture.h). A test tool: the test
 * bed's tests/linux/capture.sh runs it where it would run hvprof; hvprof itself has no capture.
 *
 *   HVPROF_CAPTURE_GUEST=FILE hvprof-capture record [record options] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/record.h"
#include "tests/tools/capture/capture.h"

static void capture(void *ctx, const struct gmem *mem)
{
    const char *path = ctx;
    struct hv_err err = {0};
    if (lx_capture(mem, path, stderr, &err) < 0)
        fprintf(stderr, "hvprof-capture: %s\n", err.msg);
}

int main(int argc, char **argv)
{
    const char *path = getenv("HVPROF_CAPTURE_GUEST");
    if (argc < 2 || strcmp(argv[1], "record") || !path || !*path) {
        fprintf(stderr, "usage: HVPROF_CAPTURE_GUEST=FILE hvprof-capture record [options]\n");
        return 2;
    }
    /* As hvprof's main: write errors are reported, not deaths (docs/reliability.md). */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    struct record_hooks hooks = {.guest_stopped = capture, .ctx = (void *)path};
    return record_main(argc - 1, argv + 1, &hooks);
}
