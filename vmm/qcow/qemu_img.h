/* qemu-img (Debian's qemu-utils) as a process of its own: QEMU's block layer judges and maps a
 * qcow2 image for hvprof (qemu_check.h, qemu_map.h) without its code in hvprof's process. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* What one run printed: its standard output whole (NUL-terminated), the start of its standard
 * error, and its wait status. */
struct qemu_img_out {
    char *out;
    size_t out_len;
    char errtext[4096];
    int status;
};

/* The image as a JSON filename (QEMU's json: pseudo-protocol): the qcow2 driver over the file
 * driver, so that nothing in the path is taken as a protocol ("nbd:", "json:"); its backing
 * file null when !with_backing, else the one its header names. 0, or -1 with err. */
int qemu_img_spec(const char *path, bool with_backing, char *out, size_t cap, struct hv_err *err);

/* Run `argv` (argv[0] "qemu-img"), standard input /dev/null, within `seconds` and `out_cap`
 * bytes of standard output (killed past either: -1 with err). 0 when it ran to its end,
 * whatever its exit status (r->status); -1 with err when it could not run. `path` names the
 * image in messages. qemu_img_out_free frees r's output either way. */
int qemu_img_run(char *const argv[], const char *path, int seconds, size_t out_cap,
                 struct qemu_img_out *r, struct hv_err *err);
void qemu_img_out_free(struct qemu_img_out *r);
