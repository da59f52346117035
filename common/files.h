/* Opening the files a command reads and writes, so that no path can hang, destroy an input or
 * be clobbered by a second hvprof (docs/reliability.md, "Files"):
 *
 *   inputs   open never blocks (O_NONBLOCK: a FIFO or a device without a writer would), and only a
 *            regular file (or a block device, a disk) is accepted;
 *   outputs  are regular files (or character devices such as /dev/null), created without
 *            truncating first: an exclusive advisory lock (flock) is taken, then the file is
 *            truncated, so a second hvprof writing the same file fails instead of corrupting it;
 *   both     an output may not be an input or another output of the same command: compared by
 *            device and inode (the same file under another name or a hard link), never by name. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>

#include "common/err.h"

/* An input file's descriptor (blocking again once open), or -1 with "PATH: why". */
int hv_open_input(const char *path, struct hv_err *err);
FILE *hv_fopen_input(const char *path, struct hv_err *err);

/* An output file's descriptor, locked and empty, or -1 with "PATH: why". `dirfd` AT_FDCWD or a
 * directory; `nofollow`: refuse a symbolic link at the last component (O_NOFOLLOW), for files
 * created in a directory someone else may write to. */
int hv_open_output_at(int dirfd, const char *path, bool nofollow, struct hv_err *err);
static inline int hv_open_output(const char *path, struct hv_err *err)
{
    return hv_open_output_at(AT_FDCWD, path, false, err);
}

/* A named file of a command: its role ("--kernel", "-o") and path (NULL: not given). */
struct hv_file_role {
    const char *role;
    const char *path;
};

/* Fails with a message naming both when an output is the same file as an input or as another
 * output (existing files only; two outputs that do not exist yet compare by name). */
int hv_check_outputs(const struct hv_file_role *outputs, size_t nout,
                     const struct hv_file_role *inputs, size_t nin, struct hv_err *err);

/* Read all of `path` (an input as above: never blocks) into a malloc'd buffer (*data, *size;
 * free() it), with a NUL after its *size bytes (text can be used as a string). Fails with "PATH: strerror" on open or read errors and "PATH: larger than N MiB"
 * past `max` bytes. A file that says it is empty (/proc/kallsyms) is read to its end. */
int hv_read_file(const char *path, size_t max, uint8_t **data, size_t *size, struct hv_err *err);
