/* QEMU's own consistency check of one qcow2 image (`qemu-img check`, a process of its own),
 * before libqcow reads it (qcow_image.c says why). */
#pragma once

#include <stdint.h>

#include "common/err.h"

#define QCOW_CHECK_SECONDS 120

/* Check `path` alone (its backing file not opened). 0, with how many of its clusters are
 * compressed (QEMU's "compressed-clusters") in *compressed; -1 with QEMU's words in err. */
int qemu_check(const char *path, uint64_t *compressed, struct hv_err *err);
