/* The parts of a qcow2 (or qcow) image header that decide which other files it reads: the
 * backing file's name, the backing file's format (header extension 0xe2792aca) and the
 * external data file (incompatible feature bit 2), from QEMU's specification of the format
 * (docs/interop/qcow2.txt, "Header" and "Header extensions"). libqcow reads the data; this
 * reads what libqcow does not tell (the backing format) so that no backing file's format is
 * ever guessed. The header is untrusted (fuzz_qcow2_header): every offset and length is
 * checked against the bytes read. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* What is read of an image's start: the header, its extensions and the backing file's name
 * lie there in any image QEMU writes (the name right after the extensions, in the first
 * cluster; QEMU refuses a backing file offset past the first cluster). */
#define QCOW2_HEADER_READ     65536u
#define QCOW2_BACKING_NAME_MAX 1023u /* the specification's bound on backing_file_size */
#define QCOW2_FORMAT_NAME_MAX  31u

struct qcow2_header {
    uint32_t version; /* 1 (QEMU's original qcow), 2 or 3 */
    uint32_t cluster_bits;
    uint64_t size; /* the virtual disk's, bytes */
    bool has_backing;
    char backing[QCOW2_BACKING_NAME_MAX + 1];
    bool has_backing_format; /* the extension is there */
    char backing_format[QCOW2_FORMAT_NAME_MAX + 1];
    bool external_data; /* its data lives in another file (incompatible feature bit 2) */
};

/* Parse the first `len` bytes of an image (at most QCOW2_HEADER_READ are looked at). -1 with
 * HV_ERR_CORRUPT naming the field when something does not hold together. */
int qcow2_header_parse(const uint8_t *buf, size_t len, struct qcow2_header *h, struct hv_err *err);

/* Read and parse the header of the image open at fd. */
int qcow2_header_read(int fd, const char *path, struct qcow2_header *h, struct hv_err *err);
