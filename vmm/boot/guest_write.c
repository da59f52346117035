#include "vmm/boot/guest_write.h"

#include <inttypes.h>
#include <string.h>

static void *range_ptr(struct gmem *mem, uint64_t gpa, uint64_t len, const char *what,
                       struct hv_err *err)
{
    void *p = len ? gmem_ptr(mem, gpa, len) : gmem_ptr(mem, gpa, 1);
    if (!p) {
        hv_errf(err, "%s [0x%" PRIx64 ", 0x%" PRIx64 ") is not in guest RAM", what, gpa, gpa + len);
    }
    return p;
}

int guest_write(struct gmem *mem, uint64_t gpa, const void *src, size_t len, const char *what,
                struct hv_err *err)
{
    void *p = range_ptr(mem, gpa, len, what, err);
    if (!p)
        return -1;
    if (len)
        memcpy(p, src, len);
    return 0;
}

int guest_zero(struct gmem *mem, uint64_t gpa, uint64_t len, const char *what, struct hv_err *err)
{
    void *p = range_ptr(mem, gpa, len, what, err);
    if (!p)
        return -1;
    if (len)
        memset(p, 0, len);
    return 0;
}
