#include "tests/common/need_kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool hv_kvm_available(void)
{
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

void hv_need_kvm(const char *test)
{
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return;
    }
    char why[256];
    snprintf(why, sizeof(why), "needs /dev/kvm (%s)", strerror(errno));
    const char *allow = getenv("HVPROF_ALLOW_NO_KVM");
    if (allow && !strcmp(allow, "1"))
        hv_skip_binary(test, why);
    fprintf(stderr,
            "FAILED: %s: %s. This test boots a guest and cannot run here; set "
            "HVPROF_ALLOW_NO_KVM=1 to report it skipped on a machine without KVM.\n",
            test, why);
    fflush(stdout);
    fflush(stderr);
    _exit(1); /* not exit(): a test stopped midway has live allocations LeakSanitizer would flag */
}

void hv_skip_binary(const char *test, const char *why)
{
    fprintf(stderr, "SKIPPED: %s: %s\n", test, why);
    fflush(stdout);
    fflush(stderr);
    _exit(77); /* as in hv_need_kvm: no leak report for a test left midway */
}
