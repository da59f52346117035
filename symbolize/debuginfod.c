/* libdebuginfod's client, asked for each module the local files do not name. */
#include "symbolize/debuginfod.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hv_debuginfod_open(struct hv_debuginfod *d, const char *urls, const char *cmd,
                       struct hv_err *err)
{
    memset(d, 0, sizeof(*d));
    d->cmd = cmd;
    const char *u = urls ? urls : getenv(DEBUGINFOD_URLS_ENV_VAR);
    if (!u || !*u)
        return 0;
    if (strlen(u) >= sizeof(d->urls))
        return hv_errk(err, HV_ERR_USAGE, "debuginfod URLs: more than %zu bytes",
                       sizeof(d->urls) - 1);
    snprintf(d->urls, sizeof(d->urls), "%s", u);
    /* The client reads its URLs from the environment at each query. */
    if (urls && setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1) != 0)
        return hv_errf_errno(err, "setenv DEBUGINFOD_URLS");
    d->client = debuginfod_begin();
    if (!d->client)
        return hv_errk(err, HV_ERR_NO_MEMORY, "debuginfod: cannot start its client");
    return 0;
}

/* Errors that say the server cannot be reached (rather than that it lacks the file). */
static bool unreachable(int e)
{
    return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH ||
           e == ECONNRESET || e == EIO || e == EAGAIN || e == ENXIO;
}

char *hv_debuginfod_find(struct hv_debuginfod *d, const uint8_t *build_id, uint32_t len,
                         const char *module)
{
    if (!d->client || d->down || !build_id || len < 2)
        return NULL;
    d->asked++;
    if (d->cmd)
        fprintf(stderr, "%s: debuginfod: asking for %s's debug file (%s)\n", d->cmd,
                module && *module ? module : "a module", d->urls);
    char *path = NULL;
    int fd = debuginfod_find_debuginfo(d->client, build_id, (int)len, &path);
    if (fd == -ENOENT) /* no debug file published: its executable has .symtab or MiniDebugInfo */
        fd = debuginfod_find_executable(d->client, build_id, (int)len, &path);
    if (fd >= 0) {
        close(fd);
        d->found++;
        return path;
    }
    free(path);
    if (!d->first_error)
        d->first_error = -fd;
    if (unreachable(-fd))
        d->down = true;
    return NULL;
}

void hv_debuginfod_summary(const struct hv_debuginfod *d, FILE *out)
{
    if (!d->client || !d->cmd || !d->asked)
        return;
    fprintf(out, "%s: debuginfod: %u of %u modules' debug files found (%s)", d->cmd, d->found,
            d->asked, d->urls);
    if (d->down)
        fprintf(out,
                "; the server could not be reached (%s): the other modules were not "
                "asked, their frames stay module+offset",
                strerror(d->first_error));
    fputc('\n', out);
}

void hv_debuginfod_close(struct hv_debuginfod *d)
{
    if (d->client)
        debuginfod_end(d->client);
    d->client = NULL;
}

bool hv_debuginfod_cache_path(const char *path)
{
    const char *b = strrchr(path, '/');
    if (!b)
        return false;
    b++;
    if (strcmp(b, "debuginfo") && strcmp(b, "executable"))
        return false;
    size_t hex = 0;
    for (const char *c = b - 2; c >= path && *c != '/'; c--, hex++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return hex >= 4;
}
