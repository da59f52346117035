#include "tests/common/run_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

int hv_run_cmd(const char *cmd, char *out, size_t cap)
{
    char full[8192];
    if (snprintf(full, sizeof(full), "%s 2>&1", cmd) >= (int)sizeof(full))
        return -1;
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    int rc = st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (rc != 0) /* what it said, for a failure's log (ctest --output-on-failure) */
        fprintf(stderr, "%s exited %d:\n%s\n", cmd, rc, out);
    return rc;
}

int hv_shf(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof(cmd))
        return -1;
    int st = system(cmd);
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
