/* libFuzzer: a disk image as hostile as a guest can make it (the guest writes the images hvprof
 * serves): probed (libblkid), opened (libext2fs) and read by inode, with our bounds on every
 * inode number and length. The image is handed over as a memfd's /proc path, as an image file
 * would be. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diskfs/diskfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_diskfs", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    const char *images[] = {path};
    struct diskfs d;
    struct hv_err err;
    if (diskfs_open(&d, images, NULL, 1, &err) == 0) {
        uint8_t buf[4096];
        for (size_t i = 0; i < d.vols.n; i++) {
            /* The root's neighbours and the first ordinary inodes, and one far out. */
            static const uint64_t inos[] = {2, 11, 12, 13, 1ull << 31};
            for (size_t k = 0; k < sizeof(inos) / sizeof(inos[0]); k++) {
                uint64_t sz;
                size_t got;
                if (diskfs_file_size(&d.vols.v[i], inos[k], &sz, &err) == 0)
                    (void)diskfs_read(&d.vols.v[i], inos[k], sz > 100 ? sz - 100 : 0, buf,
                                      sizeof(buf), &got, &err);
            }
        }
        char text[512];
        diskfs_describe(&d, text, sizeof(text));
        diskfs_close(&d);
    }
    close(fd);
    return 0;
}
