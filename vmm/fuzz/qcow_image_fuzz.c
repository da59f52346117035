/* libFuzzer: a hostile qcow2 image (vmm/qcow/qcow_image.c over libqcow): the input is the
 * image file, its header, L1 and L2 tables, refcounts, compressed clusters and backing-file name
 * as the user's image could hold them (written to a memfd and opened by its /proc path), each
 * first checked by QEMU (qemu-img check) as hvprof checks every qcow2 image. Opening
 * must fail with a message or succeed with a size; reads of a few ranges must stay inside their
 * buffers and fail cleanly past the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm/qcow/qcow_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4 || size > (8u << 20))
        return 0;
    int fd = memfd_create("qcow", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char path[64];
    /* By the harness's pid: QEMU's check, a process of its own, opens the same file. */
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
    struct qcow_image *q = NULL;
    struct hv_err err = {0};
    if (qcow_image_open(&q, path, NULL, &err) == 0) {
        static uint8_t buf[1u << 17];
        uint64_t sz = qcow_image_size(q);
        const uint64_t offs[] = {0, 512, 65536 - 512, sz / 2, sz > 4096 ? sz - 4096 : 0};
        for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
            struct iovec iov[2] = {{buf, 4096}, {buf + 4096, 65536}};
            (void)qcow_image_readv(q, iov, 2, offs[i], &err);
        }
        qcow_image_close(q);
    } else if (q || !err.msg[0]) {
        abort(); /* a failure says why and leaves nothing open */
    }
    close(fd);
    return 0;
}
