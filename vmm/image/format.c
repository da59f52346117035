/* Image formats by their first sector, and the one decision of an image's format per run
 * (format.h says why a probed format is held to the sector-0 rule). */
#include "vmm/image/format.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool starts(const uint8_t *buf, size_t len, const char *magic, size_t n)
{
    return len >= n && !memcmp(buf, magic, n);
}

/* VMDK's text descriptor: the first line that is neither a comment nor blank reads
 * "version=N" (QEMU's vmdk probe; it takes 1 and 2, newer VMware writes 3: all refused). */
static bool vmdk_descriptor(const uint8_t *buf, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (buf[i] == '#') {
            while (i < len && buf[i] != '\n')
                i++;
            i++;
            continue;
        }
        while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r'))
            i++;
        if (i < len && buf[i] == '\n') {
            i++;
            continue;
        }
        return len - i >= 9 && !memcmp(buf + i, "version=", 8) && buf[i + 8] >= '1' &&
               buf[i + 8] <= '3';
    }
    return false;
}

const char *image_format_probe(const uint8_t *buf, size_t len)
{
    if (len > IMAGE_PROBE_BYTES)
        len = IMAGE_PROBE_BYTES;
    /* Each format's own magic at its own place (QEMU's block/<format>.c probe functions; the
     * formats' specifications: docs/interop/qcow2.txt, qed_spec.txt, VMDK's, VHDX's, VHD's). */
    if (starts(buf, len, "QFI\xfb", 4))
        return "qcow2";
    if (starts(buf, len, "QED\0", 4))
        return "QED";
    if (starts(buf, len, "KDMV", 4) || starts(buf, len, "COWD", 4) || vmdk_descriptor(buf, len))
        return "VMDK";
    if (starts(buf, len, "vhdxfile", 8))
        return "VHDX";
    if (starts(buf, len, "conectix", 8))
        return "VHD";
    if (starts(buf, len, "LUKS\xba\xbe", 6))
        return "LUKS";
    if (starts(buf, len, "WithoutFreeSpace", 16) || starts(buf, len, "WithouFreSpacExt", 16))
        return "Parallels";
    if (starts(buf, len, "Bochs Virtual HD Image", 22))
        return "Bochs";
    if (starts(buf, len, "#!/bin/sh\n#V2.0 Format\n", 23))
        return "cloop";
    /* VDI: its signature 0xbeda107f, little-endian, at byte 0x40 of the pre-header. */
    if (len >= 0x44 && buf[0x40] == 0x7f && buf[0x41] == 0x10 && buf[0x42] == 0xda &&
        buf[0x43] == 0xbe)
        return "VDI";
    return NULL;
}

bool image_format_parse(const char *s, enum image_format *out)
{
    static const struct {
        const char *name;
        enum image_format f;
    } names[] = {{"auto", IMAGE_FORMAT_AUTO}, {"raw", IMAGE_FORMAT_RAW}, {"qcow2", IMAGE_FORMAT_QCOW2}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].f;
            return true;
        }
    return false;
}

const char *image_format_name(enum image_format f)
{
    return f == IMAGE_FORMAT_RAW ? "raw" : f == IMAGE_FORMAT_QCOW2 ? "qcow2" : "auto";
}

int image_format_decide(int fd, const char *path, struct image_opts *o, struct hv_err *err)
{
    uint8_t head[IMAGE_PROBE_BYTES];
    ssize_t got;
    do
        got = pread(fd, head, sizeof(head), 0);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        return hv_errf_errno(err, "%s", path);
    const char *probed = image_format_probe(head, (size_t)got);
    if (o->format == IMAGE_FORMAT_QCOW2 && (!probed || strcmp(probed, "qcow2")))
        return hv_errk(err, HV_ERR_USAGE, "%s: format=qcow2 given, but it is %s%s", path,
                       probed ? "a " : "not a qcow2 image", probed ? probed : "");
    if (o->format != IMAGE_FORMAT_AUTO)
        return 0; /* given: used as given, never probed (format.h) */
    if (probed && strcmp(probed, "qcow2")) {
        /* qemu-img's name of it (its -f), which is not always ours. */
        static const char *const qemu[][2] = {{"QED", "qed"},        {"VMDK", "vmdk"},
                                              {"VHDX", "vhdx"},      {"VHD", "vpc"},
                                              {"LUKS", "luks"},      {"Parallels", "parallels"},
                                              {"Bochs", "bochs"},    {"cloop", "cloop"},
                                              {"VDI", "vdi"}};
        const char *f = probed;
        for (size_t i = 0; i < sizeof(qemu) / sizeof(qemu[0]); i++)
            if (!strcmp(qemu[i][0], probed))
                f = qemu[i][1];
        return hv_errk(err, HV_ERR_UNSUPPORTED,
                       "%s: a %s image; hvprof reads raw and qcow2 images: convert it, naming its "
                       "format so that nothing is probed (qemu-img convert -f %s -O raw %s "
                       "IMAGE.raw), or give format=raw if it is a raw disk",
                       path, probed, f, path);
    }
    o->format = probed ? IMAGE_FORMAT_QCOW2 : IMAGE_FORMAT_RAW;
    o->probed = true;
    return 0;
}
