#include "vmm/boot/read_file.h"

#include "common/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int boot_read_file(const char *path, size_t max, uint8_t **data, size_t *size, struct hv_err *err)
{
    int fd = hv_open_input(path, err); /* never blocks: a FIFO is refused */
    if (fd < 0)
        return -1;
    struct stat st;
    size_t cap = 1 << 16;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1; /* +1: see EOF without growing */
    if (cap > max + 1)
        cap = max + 1;

    uint8_t *buf = malloc(cap);
    size_t len = 0;
    if (!buf) {
        close(fd);
        return hv_errf(err, "%s: out of memory", path);
    }
    for (;;) {
        if (len == cap) {
            if (cap > max) {
                free(buf);
                close(fd);
                return hv_errf(err, "%s: larger than %zu MiB", path, max >> 20);
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            uint8_t *nbuf = realloc(buf, ncap);
            if (!nbuf) {
                free(buf);
                close(fd);
                return hv_errf(err, "%s: out of memory", path);
            }
            buf = nbuf;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            errno = e;
            return hv_errf_errno(err, "%s", path);
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    *data = buf;
    *size = len;
    return 0;
}
