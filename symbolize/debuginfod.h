/* Debug files from where distributions publish them, by build-id: a debuginfod server (Debian,
 * Ubuntu, Fedora and Arch run public ones) through elfutils' own client, libdebuginfod, which
 * perf, gdb and systemd-coredump use: $DEBUGINFOD_URLS as every tool reads it (or the URLs
 * given), its cache ($DEBUGINFOD_CACHE_PATH, ~/.cache/debuginfod_client), its time-outs
 * ($DEBUGINFOD_TIMEOUT). A server that is down or slow never fails a report: after its first
 * failure to connect it is not asked again, and the frames stay module+offset. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

struct hv_debuginfod {
    void *client;          /* debuginfod_client, NULL: off (no URLs) */
    const char *cmd;       /* the messages' prefix ("hvprof report"), NULL: silent */
    bool down;             /* a connection failed: not asked again */
    unsigned asked, found; /* build-ids asked, files found */
    int first_error;       /* the first failure's errno (0: none) */
    char urls[1024];
};

/* Start a client for `urls` (NULL: $DEBUGINFOD_URLS; none there: off, 0 returned). */
int hv_debuginfod_open(struct hv_debuginfod *d, const char *urls, const char *cmd,
                       struct hv_err *err);
/* The debug file of a build-id (its executable when no debug file is published), as a
 * malloc'd path in the client's cache; NULL when there is none or the client is off or down. */
char *hv_debuginfod_find(struct hv_debuginfod *d, const uint8_t *build_id, uint32_t len,
                         const char *module);
/* One line of what was asked and found, and why not where a server failed. */
void hv_debuginfod_summary(const struct hv_debuginfod *d, FILE *out);
void hv_debuginfod_close(struct hv_debuginfod *d);

/* Whether `path` is a file of a debuginfod client's cache, <cache>/<build-id hex>/debuginfo or
 * .../executable (the layout libdebuginfod writes, debuginfod-client-config(7)): its name says
 * nothing of the module. */
bool hv_debuginfod_cache_path(const char *path);
