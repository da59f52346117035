/* The kernel command line at HVPROF_LOW_CMDLINE. */
#pragma once

#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

/* Write `cmdline` NUL-terminated at HVPROF_LOW_CMDLINE. Fails if it is longer than `max_len`
 * bytes (without the NUL) or than the 4095 bytes the area holds. *len = strlen(cmdline). */
int cmdline_write(struct gmem *mem, const char *cmdline, uint32_t max_len, uint32_t *len,
                  struct hv_err *err);
