#include "vmm/boot/cmdline.h"

#include <string.h>

#include "vmm/boot/guest_write.h"
#include "vmm/boot/layout.h"

int cmdline_write(struct gmem *mem, const char *cmdline, uint32_t max_len, uint32_t *len,
                  struct hv_err *err)
{
    if (max_len > BOOT_CMDLINE_MAX)
        max_len = BOOT_CMDLINE_MAX;
    size_t n = strnlen(cmdline, (size_t)max_len + 1);
    if (n > max_len)
        return hv_errf(err, "command line is %zu bytes, the kernel accepts at most %u",
                       strlen(cmdline), max_len);
    if (guest_write(mem, HVPROF_LOW_CMDLINE, cmdline, n + 1, "command line", err))
        return -1;
    *len = (uint32_t)n;
    return 0;
}
