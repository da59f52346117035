/* A whole recording in memory for the reader: read, not mapped, so that a file another process
 * shrinks while it is read gives a consistent prefix instead of SIGBUS (a mapping's pages past
 * the new end fault), and one that grows is read up to its size at open. */
#include "fxt/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/files.h"

/* Files whose size stat does not tell (/proc files say 0) are read up to this. */
#define UNSIZED_MAX (64u << 20)

int fxtr_map_file(const char *path, const void **ptr, size_t *len, struct hv_err *err)
{
    *ptr = NULL;
    *len = 0;
    int fd = hv_open_input(path, err);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return hv_errf_errno(err, "%s: stat", path);
    }
    size_t want = st.st_size > 0 ? (size_t)st.st_size : UNSIZED_MAX;
    uint8_t *buf = malloc(want ? want : 1);
    if (!buf) {
        close(fd);
        return hv_errk(err, HV_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", path, want);
    }
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            errno = e;
            return hv_errf_errno(err, "%s: read", path);
        }
        if (n == 0)
            break; /* shrunk while read: the prefix that is there */
        got += (size_t)n;
    }
    close(fd);
    if (!got) {
        free(buf);
        return 0;
    }
    *ptr = buf;
    *len = got;
    return 0;
}

void fxtr_unmap_file(const void *ptr, size_t len)
{
    (void)len;
    free((void *)ptr);
}
