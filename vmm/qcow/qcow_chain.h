/* A qcow2 image's backing chain, resolved by hvprof's rules before any of it is read: the files
 * a disk is made of, each opened once, so that the block device, the disk's file systems, the
 * outputs' check ("never write over an input") and the note shown before boot all see the same
 * files (docs/security.md, "Disk images").
 *
 * The image is someone else's: its header names the backing file, and a name is only a name.
 * So, at every level:
 *   - the backing file's format comes from the header (backing_fmt) or from the user
 *     (image_opts.backing_format), never from a probe; a backing file whose stated format is
 *     not what its own header is, or is not one libqcow reads (qcow2, qcow), is refused;
 *   - the backing file lies in the directory of the image the user named (after symbolic
 *     links and "..", as realpath() resolves them), or below the directory the user allows
 *     (image_opts.backing_dir): an image cannot reach another VM's disk elsewhere on the host;
 *   - no file twice (a loop), at most QCOW_MAX_CHAIN files, no external data file. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/image/format.h"
#include "vmm/qcow/qcow2_header.h"

#define QCOW_MAX_CHAIN 16

struct qcow_chain_file {
    char path[PATH_MAX]; /* as the header named it, resolved against its image's directory */
    char real[PATH_MAX]; /* after symbolic links */
    char format[QCOW2_FORMAT_NAME_MAX + 1]; /* "qcow2" */
    const char *format_from;                /* "given", "probed", "backing_fmt", "--disk" */
    int fd;                                 /* open read-only; the chain's to close */
    uint64_t size;                          /* the file's own size */
    struct qcow2_header h;
};

struct qcow_chain {
    struct qcow_chain_file f[QCOW_MAX_CHAIN]; /* [0] the image, then its backing files */
    unsigned n;
};

/* Resolve `path`'s chain by the rules above. 0, or -1 with a message naming the file and the
 * rule (and what the user can do). The chain's files stay open until qcow_chain_close. */
int qcow_chain_resolve(struct qcow_chain *c, const char *path, const struct image_opts *o,
                       struct hv_err *err);

/* Lock every file of the chain as a reader that lets nobody write or resize it
 * (vmm/image/image_lock.h), for as long as the descriptors stay open. */
int qcow_chain_lock(struct qcow_chain *c, struct hv_err *err);

/* "IMAGE (qcow2) <- BASE (qcow2, backing_fmt)", for the note before boot. */
void qcow_chain_describe(const struct qcow_chain *c, char *out, size_t len);

void qcow_chain_close(struct qcow_chain *c);
