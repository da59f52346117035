/* `--disk FILE[,format=raw|qcow2][,readonly][,backing-format=qcow2][,backing-dir=DIR]`: one
 * disk as the user names it (a comma inside FILE is written ",,", as QEMU's -drive has it).
 * Parsed apart from everything else so that it is tested on its own. */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "common/err.h"
#include "vmm/image/format.h"

struct disk_spec {
    char path[PATH_MAX];
    bool readonly;
    enum image_format format; /* IMAGE_FORMAT_AUTO when not given */
    char backing_format[16];  /* "" when not given */
    char backing_dir[PATH_MAX];
};

/* -1 with a message naming the part that is wrong. */
int disk_spec_parse(const char *arg, struct disk_spec *d, struct hv_err *err);
