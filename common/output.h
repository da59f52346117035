/* The files hvprof writes, made so that no output ever destroys data (docs/security.md,
 * "Outputs"):
 *
 *   - an output is written as NAME.part, created with O_EXCL|O_NOFOLLOW and mode 0600 (it holds
 *     guest memory: stack words, strings, file contents), and renamed over NAME when it is
 *     ready: a symbolic link at NAME is replaced, never followed, and a reader of NAME never
 *     sees half a file;
 *   - an existing NAME that is an hvprof recording is kept as NAME.old (as perf keeps
 *     perf.data.old), unless another process is writing it; any other existing file, a
 *     symbolic link included, is replaced only with HV_OUTPUT_FORCE (--force); an empty file
 *     holds nothing and is replaced;
 *   - a character device (/dev/null, a terminal) is written in place, as it is;
 *   - the output's directory stays open, so that later files of the same command (the flight
 *     recorder's snapshots) are made through it, with no path walked again once confined.
 *
 * That an output is not one of the command's inputs is checked before, by device and inode
 * (common/files.h, hv_check_outputs). */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "common/err.h"

#define HV_OUTPUT_FORCE     1u /* replace an existing file that is not a recording */
#define HV_OUTPUT_RECORDING 2u /* an hvprof recording: an existing one goes to NAME.old */

struct hv_output {
    int dirfd;           /* the output's directory (O_PATH), -1 for a device */
    int fd;              /* open for reading and writing (a snapshot reads it back), locked */
    bool device;         /* a character device: written in place, nothing renamed */
    bool committed;      /* NAME is the new file */
    bool kept_old;       /* the previous recording is NAME.old */
    unsigned flags;
    char name[NAME_MAX + 1], part[NAME_MAX + 8];
    char path[PATH_MAX]; /* as given, for messages */
};

/* Create `path` (relative to dirfd, AT_FDCWD or a directory) as NAME.part, checking what NAME
 * is now. -1 with "PATH: why" (and what to do: --force, remove NAME.part). */
int hv_output_open(struct hv_output *o, int dirfd, const char *path, unsigned flags,
                   struct hv_err *err);

/* NAME becomes the new file: an existing recording is first moved to NAME.old (with
 * HV_OUTPUT_RECORDING), then NAME.part renamed over NAME. Idempotent; nothing for a device. */
int hv_output_commit(struct hv_output *o, struct hv_err *err);

/* The output failed before it was committed: NAME.part is removed, NAME left as it was (a
 * committed file stays: it holds what was written). Closes the file. */
void hv_output_discard(struct hv_output *o);

/* Close the directory (and the file if still open; a caller that handed the descriptor to a
 * writer sets o->fd = -1 first). */
void hv_output_close(struct hv_output *o);

/* Whether the file open at fd begins with the FXT magic record (an hvprof recording). */
bool hv_output_is_recording(int fd);
