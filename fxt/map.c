/* Read-only mapping of a whole recording for the reader. */
#include "fxt/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int fxtr_map_file(const char *path, const void **ptr, size_t *len, struct hv_err *err)
{
    *ptr = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hv_errf_errno(err, "%s", path);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return hv_errf_errno(err, "%s: stat", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return hv_errf(err, "%s: not a regular file", path);
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return hv_errf_errno(err, "%s: mmap", path);
        }
        *ptr = p;
        *len = (size_t)st.st_size;
    }
    close(fd);
    return 0;
}

void fxtr_unmap_file(const void *ptr, size_t len)
{
    if (ptr && len)
        munmap((void *)ptr, len);
}
