/* A qcow2 (or qcow) disk image read through libyal's libqcow (Debian's libqcow-dev), with its
 * backing chain, resolved and opened by hvprof's rules (qcow_chain.h: formats stated, never
 * probed; backing files beside the image; no loop) and locked against every other writer for
 * as long as it is open. Read-only: the block device keeps the guest's writes in its private overlay
 * (docs/virtio.md). An image whose chain has compressed clusters keeps 16 MiB of them
 * decompressed (cluster_cache.h). What QEMU's map of the chain places (qemu_map.h: data stored
 * as is, zeros) is read from the files directly, as a raw image is; the rest through libqcow.
 * Thread-safe: reads of mapped data in parallel, libqcow's one at a time. Encrypted images and raw
 * backing files are refused with a message. The header, tables and clusters are untrusted
 * (fuzz_qcow_image). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/err.h"
#include "vmm/image/format.h"
#include "vmm/qcow/qcow_chain.h"

struct qcow_image;

/* True when the first bytes of a file are a qcow header ("QFI\xfb"). */
bool qcow_image_magic(const uint8_t head[4]);

/* Open `path` and its backing chain (o: the disk's options; NULL: none given, so a backing
 * file must state its format and lie beside the image). 0, or -1 with err. */
int qcow_image_open(struct qcow_image **out, const char *path, const struct image_opts *o,
                    struct hv_err *err);

/* The chain's files, for the outputs' check and the note before boot. */
const struct qcow_chain *qcow_image_chain(const struct qcow_image *q);

/* The virtual disk's size in bytes. */
uint64_t qcow_image_size(const struct qcow_image *q);

/* What it is, for the summary: "qcow2, 2 GiB, backing chain: base.qcow2". */
const char *qcow_image_describe(const struct qcow_image *q);

/* Read the whole range into the iovecs; false on an error (err says which) or past the end. */
bool qcow_image_readv(struct qcow_image *q, const struct iovec *iov, int n, uint64_t off,
                      struct hv_err *err);

/* Reads served from decompressed clusters kept (hits) and clusters read (misses); both 0 for
 * an image without compressed clusters, which keeps none (cluster_cache.h). */
void qcow_image_cache_stats(const struct qcow_image *q, uint64_t *hits, uint64_t *misses);

/* Bytes read from where QEMU's map says they lie (pread() of the chain's files, or zeros;
 * qemu_map.h) and through libqcow (what the map does not hold: compressed clusters). */
void qcow_image_map_stats(const struct qcow_image *q, uint64_t *mapped, uint64_t *libqcow);

void qcow_image_close(struct qcow_image *q);
