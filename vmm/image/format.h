/* A disk image's format: what the user said (--disk FILE,format=raw|qcow2, libvirt's
 * <driver type=...>), or, when nobody said, what its first sector probes as.
 *
 * A probed format is never trusted further than the one run it was probed for. A raw image's
 * first sector is the guest's to write, so a guest that writes a qcow2 header there (with a
 * backing file naming any file on the host) would turn its own disk into a window onto that
 * file the next time the image is probed (QEMU's CVE-2008-2004). Two rules close that, as
 * QEMU closes it: a format given is used as given and never probed, and on an image that was
 * *probed* raw the guest may not write a first sector that would probe as anything else
 * (QEMU's block/raw-format.c, raw_co_pwritev: "-EPERM" for such a write). The probes are the
 * first-sector magics of the formats QEMU's own probes recognise (each driver's .bdrv_probe;
 * docs/security.md lists them with their source), so what hvprof refuses is exactly what could
 * later be opened as something more powerful than raw. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Bytes of an image's start a probe looks at (QEMU's probes decide on the first 512 too). */
#define IMAGE_PROBE_BYTES 512u

enum image_format {
    IMAGE_FORMAT_AUTO = 0, /* not given: probe once, before boot */
    IMAGE_FORMAT_RAW,
    IMAGE_FORMAT_QCOW2, /* qcow2 (and QEMU's original qcow), read through libqcow */
};

/* How a disk's image is to be opened: its format and who decided it, and what its qcow2
 * backing chain may be (vmm/qcow/qcow_chain.h). All strings are the caller's. */
struct image_opts {
    enum image_format format;
    bool probed; /* the format came from a probe, not from the user (the sector-0 rule holds) */
    /* A backing file whose header does not state its format is refused, unless this says
     * what it is ("qcow2": --disk ...,backing-format=qcow2); NULL: nothing given. */
    const char *backing_format;
    /* Backing files must lie in the image's own directory (after symbolic links), or below
     * this one (--disk ...,backing-dir=DIR); NULL: only the image's directory. */
    const char *backing_dir;
};

/* The name of the format the first `len` bytes probe as ("qcow2", "VMDK", "VHDX", ...), NULL
 * for raw: no format's magic. `len` may be short (a short file): only what is there is read. */
const char *image_format_probe(const uint8_t *buf, size_t len);

/* "raw" / "qcow2" (and "auto") to the enum; false for anything else. */
bool image_format_parse(const char *s, enum image_format *out);
const char *image_format_name(enum image_format f);

/* Decide an image's format once, from its file: *o->format stays when given; AUTO becomes the
 * probed one (o->probed set). A probe that finds a format hvprof does not read fails with the
 * name of that format and how to convert it without probing. `fd` is the image, open. */
int image_format_decide(int fd, const char *path, struct image_opts *o, struct hv_err *err);
