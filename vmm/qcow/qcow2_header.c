/* A qcow2 header's backing file, backing format and external data file (qcow2_header.h), read
 * by the specification's offsets (QEMU's docs/interop/qcow2.txt). */
#include "vmm/qcow/qcow2_header.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXT_END            0x00000000u
#define EXT_BACKING_FORMAT 0xe2792acau
#define INCOMPAT_DATA_FILE (1ull << 2)

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* A name from the header: printable, no NUL inside (a path hvprof may open and print). */
static bool plain(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

int qcow2_header_parse(const uint8_t *buf, size_t len, struct qcow2_header *h, struct hv_err *err)
{
    memset(h, 0, sizeof(*h));
    if (len > QCOW2_HEADER_READ)
        len = QCOW2_HEADER_READ;
    if (len < 32 || memcmp(buf, "QFI\xfb", 4))
        return hv_errk(err, HV_ERR_CORRUPT, "not a qcow header");
    h->version = be32(buf + 4);
    if (h->version < 1 || h->version > 3)
        return hv_errk(err, HV_ERR_UNSUPPORTED, "qcow version %u", h->version);
    uint64_t name_off = be64(buf + 8);
    uint32_t name_len = be32(buf + 16);
    /* Version 1 puts mtime at 20, the size at 24 and the cluster bits in byte 32 (QEMU's
     * block/qcow.c QCowHeader); 2 and 3 the cluster bits at 20, the size at 24. */
    h->size = be64(buf + 24);
    if (h->version == 1) {
        if (len < 48)
            return hv_errk(err, HV_ERR_CORRUPT, "a qcow header cut short");
        h->cluster_bits = buf[32];
    } else {
        if (len < 72)
            return hv_errk(err, HV_ERR_CORRUPT, "a qcow2 header cut short");
        h->cluster_bits = be32(buf + 20);
    }
    if (h->cluster_bits < 9 || h->cluster_bits > 21)
        return hv_errk(err, HV_ERR_CORRUPT, "cluster_bits %u (QEMU takes 9 to 21)",
                       h->cluster_bits);
    if (name_off || name_len) {
        if (name_len == 0 || name_len > QCOW2_BACKING_NAME_MAX)
            return hv_errk(err, HV_ERR_CORRUPT, "a backing file name of %u bytes", name_len);
        if (name_off > len || name_len > len - name_off)
            return hv_errk(err, HV_ERR_CORRUPT,
                           "its backing file name lies past its first %zu bytes", len);
        if (!plain(buf + name_off, name_len))
            return hv_errk(err, HV_ERR_CORRUPT, "its backing file name is not a plain path");
        memcpy(h->backing, buf + name_off, name_len);
        h->backing[name_len] = 0;
        h->has_backing = true;
    }
    if (h->version == 1)
        return 0; /* no extensions, no features: a version 1 header states no backing format */
    /* Version 3: incompatible features at 72, the header's length at 100; version 2's header
     * is 72 bytes. Extensions follow the header, up to the backing file's name (or the first
     * cluster), each a type, a length and data padded to 8 bytes, ended by type 0. */
    uint64_t at = 72;
    if (h->version == 3) {
        if (len < 104)
            return hv_errk(err, HV_ERR_CORRUPT, "a qcow2 version 3 header cut short");
        h->external_data = be64(buf + 72) & INCOMPAT_DATA_FILE;
        at = be32(buf + 100);
        if (at < 104 || at % 8)
            return hv_errk(err, HV_ERR_CORRUPT, "header_length %llu", (unsigned long long)at);
    }
    uint64_t end = name_off ? name_off : (uint64_t)1 << h->cluster_bits;
    if (end > len)
        end = len;
    while (at + 8 <= end) {
        uint32_t type = be32(buf + at), elen = be32(buf + at + 4);
        at += 8;
        if (type == EXT_END)
            return 0;
        if (elen > end - at)
            return hv_errk(err, HV_ERR_CORRUPT,
                           "header extension 0x%08x of %u bytes runs past the header", type,
                           elen);
        if (type == EXT_BACKING_FORMAT) {
            if (elen == 0 || elen > QCOW2_FORMAT_NAME_MAX || !plain(buf + at, elen))
                return hv_errk(err, HV_ERR_CORRUPT, "its backing format extension is not a name");
            memcpy(h->backing_format, buf + at, elen);
            h->backing_format[elen] = 0;
            h->has_backing_format = true;
        }
        at += ((uint64_t)elen + 7) & ~7ull;
    }
    /* No end marker before the name (or in what was read): QEMU reads the extensions it
     * finds up to there, and so does this. */
    return 0;
}

int qcow2_header_read(int fd, const char *path, struct qcow2_header *h, struct hv_err *err)
{
    uint8_t *buf = malloc(QCOW2_HEADER_READ);
    if (!buf)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    size_t got = 0;
    while (got < QCOW2_HEADER_READ) {
        ssize_t n = pread(fd, buf + got, QCOW2_HEADER_READ - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return hv_errf_errno(err, "%s", path);
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    int rc = qcow2_header_parse(buf, got, h, err);
    free(buf);
    return rc < 0 ? hv_err_prefix(err, "%s", path) : 0;
}
