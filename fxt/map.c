/* A whole recording in memory for the reader: read, not mapped, so that a file another process
 * shrinks while it is read gives a consistent prefix instead of SIGBUS (a mapping's pages past
 * the new end fault). The reading is common/files.h's one whole-file reader. */
#include "fxt/reader.h"

#include <stdlib.h>

#include "common/files.h"

/* Larger than any recording this host could hold in memory: the reader's bound is memory. */
#define RECORDING_MAX ((size_t)1 << 40)

int fxtr_map_file(const char *path, const void **ptr, size_t *len, struct hv_err *err)
{
    *ptr = NULL;
    *len = 0;
    uint8_t *buf;
    size_t n;
    if (hv_read_file(path, RECORDING_MAX, &buf, &n, err) < 0)
        return -1;
    if (!n) {
        free(buf);
        return 0;
    }
    *ptr = buf;
    *len = n;
    return 0;
}

void fxtr_unmap_file(const void *ptr, size_t len)
{
    (void)len;
    free((void *)ptr);
}
