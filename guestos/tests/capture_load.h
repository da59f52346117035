/* A captured guest (tests/tools/capture/capture.h) as guest memory again, for the tests and the
 * benchmark: its RAM slots at their sizes, zero but for the captured pages. */
#pragma once

#include <stdint.h>

#include "common/err.h"
#include "tests/tools/capture/capture.h"

struct captured {
    struct gmem mem;
    uint8_t *ram[GMEM_MAX_SLOTS];
    uint64_t size[GMEM_MAX_SLOTS];
    uint32_t npages;
};

/* Read `path` (gzip or plain). 0, or -1 with err (not a capture, a page outside its RAM). */
int capture_load(const char *path, struct captured *c, struct hv_err *err);
void capture_free(struct captured *c);
