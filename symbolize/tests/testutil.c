#include "common/files.h"
#include "testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *fixture(const char *name)
{
    static char buf[2][4096];
    static int slot;
    slot ^= 1;
    snprintf(buf[slot], sizeof(buf[slot]), "%s/%s", FIXTURE_OUT, name);
    return buf[slot];
}

char *make_temp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/hvprof-symtest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(path))
        return NULL;
    return strdup(path);
}

void remove_temp_dir(char *dir)
{
    if (!dir)
        return;
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(dir);
}

char *run_capture(const char *cmd, int *status)
{
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    size_t n;
    while (out && (n = fread(out + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *o = realloc(out, cap *= 2);
            if (!o) {
                free(out);
                out = NULL;
            }
            out = o;
        }
    }
    int st = pclose(f);
    if (status)
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (out)
        out[len] = 0;
    return out;
}

size_t readelf_build_id(const char *path, char *out, size_t cap)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "readelf -n '%s'", path);
    char *text = run_capture(cmd, NULL);
    size_t len = 0;
    const char *p = text ? strstr(text, "Build ID: ") : NULL;
    if (p) {
        p += 10;
        while (len + 1 < cap &&
               ((p[len] >= '0' && p[len] <= '9') || (p[len] >= 'a' && p[len] <= 'f'))) {
            out[len] = p[len];
            len++;
        }
    }
    out[len] = 0;
    free(text);
    return len;
}

uint64_t nm_address(const char *path, const char *name)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"%s\" { print $1 }'", path, name);
    char *text = run_capture(cmd, NULL);
    uint64_t v = text ? strtoull(text, NULL, 16) : 0;
    free(text);
    return v;
}

void *read_file(const char *path, size_t *len)
{
    uint8_t *buf;
    struct hv_err err;
    if (hv_read_file(path, 1ull << 30, &buf, len, &err) < 0)
        return NULL;
    return buf;
}

char *run_capturef(int *status, const char *fmt, ...)
{
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return run_capture(cmd, status);
}
