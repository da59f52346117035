/* QEMU's own consistency check of one image of the chain (`qemu-img check`, a process of its
 * own) before libqcow reads it: libqcow trusts the header and tables more than a hostile image
 * deserves (qcow_image_fuzz found a heap overflow in its reads of an image whose header claims
 * an impossible size, which QEMU refuses to open). Each image alone (its backing file not
 * opened: the chain is walked by qcow_image.c, with its loops refused first, as a check of a
 * looping chain would not end), within QCOW_CHECK_SECONDS. Exit status 0 (clean) or 3 (leaked
 * clusters: space lost, data intact) passes; 1 (not checked) and 2 (corrupt) refuse, with
 * QEMU's words (its standard error). Its report (`--output=json`, standard output) also says
 * how many clusters are compressed, which decides whether decompressed clusters are kept
 * (cluster_cache.h). */
#include "vmm/qcow/qemu_check.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct capture {
    int fd;
    char buf[4096];
    size_t got;
};

/* Read what is there; false when the child closed it. */
static bool drain(struct capture *c)
{
    char tmp[512];
    ssize_t n = read(c->fd, tmp, sizeof(tmp));
    if (n == 0 || (n < 0 && errno != EINTR))
        return false;
    for (ssize_t i = 0; i < n && c->got + 1 < sizeof(c->buf); i++)
        c->buf[c->got++] = tmp[i];
    return true;
}

/* QEMU's JSON report's "compressed-clusters" (qapi/block-core.json, ImageCheck). */
static uint64_t compressed_clusters(const char *json)
{
    const char *k = strstr(json, "\"compressed-clusters\"");
    if (!k)
        return 0;
    k = strchr(k, ':');
    return k ? strtoull(k + 1, NULL, 10) : 0;
}

/* QEMU's reason: the first line of its standard error ("qemu-img: Could not open
 * 'json:{...}': Image is too big": what follows the name), else of its report. */
static int refused(const char *path, int status, char *out, struct hv_err *err)
{
    out[strcspn(out, "\n")] = 0;
    const char *why = strstr(out, "}': ")              ? strstr(out, "}': ") + 4
                      : strncmp(out, "qemu-img: ", 10) ? out
                                                       : out + 10;
    return hv_errk(err, HV_ERR_CORRUPT, "%s: QEMU finds the image %s%s%.200s", path,
                   WIFEXITED(status) && WEXITSTATUS(status) == 2 ? "corrupt" : "unreadable",
                   why[0] ? ": " : "", why);
}

int qemu_check(const char *path, uint64_t *compressed, struct hv_err *err)
{
    *compressed = 0;
    /* The image by a JSON filename (QEMU's json: pseudo-protocol), its backing set to null. */
    char spec[2 * PATH_MAX + 128];
    size_t at = (size_t)snprintf(spec, sizeof(spec),
                                 "json:{\"driver\":\"qcow2\",\"backing\":null,\"file\":"
                                 "{\"driver\":\"file\",\"filename\":\"");
    for (const char *c = path; *c && at + 8 < sizeof(spec); c++) {
        if ((unsigned char)*c < 0x20)
            return hv_errk(err, HV_ERR_UNSUPPORTED, "%s: a control character in the path", path);
        if (*c == '"' || *c == '\\')
            spec[at++] = '\\';
        spec[at++] = *c;
    }
    snprintf(spec + at, sizeof(spec) - at, "\"}}");
    int outp[2], errp[2];
    if (pipe2(outp, O_CLOEXEC) < 0)
        return hv_errf_errno(err, "%s: qemu-img check", path);
    if (pipe2(errp, O_CLOEXEC) < 0) {
        close(outp[0]);
        close(outp[1]);
        return hv_errf_errno(err, "%s: qemu-img check", path);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* -U: the image's locks are judged by the block device (image_lock.h), not here. */
    char *argv[] = {"qemu-img", "check", "--output=json", "-U", spec, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "qemu-img", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(outp[1]);
    close(errp[1]);
    if (rc != 0) {
        close(outp[0]);
        close(errp[0]);
        return hv_errk(err, HV_ERR_UNSUPPORTED,
                       "%s: qemu-img (Debian's qemu-utils) checks a qcow2 image before hvprof "
                       "reads it, and cannot be run: %s",
                       path, strerror(rc));
    }
    struct capture *o = calloc(1, sizeof(*o)), *e = calloc(1, sizeof(*e));
    if (!o || !e) {
        free(o);
        free(e);
        close(outp[0]);
        close(errp[0]);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    o->fd = outp[0];
    e->fd = errp[0];
    bool late = false, o_open = true, e_open = true;
    for (int waited_ms = 0; o_open || e_open;) {
        struct pollfd p[2] = {{.fd = o_open ? o->fd : -1, .events = POLLIN},
                              {.fd = e_open ? e->fd : -1, .events = POLLIN}};
        int r = poll(p, 2, 100);
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0) {
            if (p[0].revents && !drain(o))
                o_open = false;
            if (p[1].revents && !drain(e))
                e_open = false;
        } else if ((waited_ms += 100) >= QCOW_CHECK_SECONDS * 1000) {
            late = true;
            kill(pid, SIGKILL);
            break;
        }
    }
    close(o->fd);
    close(e->fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    o->buf[o->got] = 0;
    e->buf[e->got] = 0;
    if (late)
        rc = hv_errk(err, HV_ERR_CORRUPT, "%s: QEMU's check of the image took over %d s", path,
                     QCOW_CHECK_SECONDS);
    else if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3))
        *compressed = compressed_clusters(o->buf);
    else
        rc = refused(path, status, e->got ? e->buf : o->buf, err);
    free(o);
    free(e);
    return rc;
}
