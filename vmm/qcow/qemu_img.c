#include "vmm/qcow/qemu_img.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int qemu_img_spec(const char *path, bool with_backing, char *out, size_t cap, struct hv_err *err)
{
    int at = snprintf(out, cap,
                      "json:{\"driver\":\"qcow2\",%s\"file\":{\"driver\":\"file\",\"filename\":\"",
                      with_backing ? "" : "\"backing\":null,");
    if (at < 0 || (size_t)at >= cap)
        return hv_errk(err, HV_ERR_LIMIT, "%s: its path is too long", path);
    size_t n = (size_t)at;
    for (const char *c = path; *c; c++) {
        if ((unsigned char)*c < 0x20)
            return hv_errk(err, HV_ERR_UNSUPPORTED, "%s: a control character in the path", path);
        if (n + 8 >= cap)
            return hv_errk(err, HV_ERR_LIMIT, "%s: its path is too long", path);
        if (*c == '"' || *c == '\\')
            out[n++] = '\\';
        out[n++] = *c;
    }
    snprintf(out + n, cap - n, "\"}}");
    return 0;
}

/* Append what is there to a buffer of at most `cap` bytes (the rest is read and dropped when
 * `drop`, else *over is set); false when the child closed its end. */
static bool drain(int fd, char **buf, size_t *len, size_t *alloc, size_t cap, bool drop, bool *over)
{
    char tmp[16384];
    ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        return false;
    if (n < 0)
        return true;
    size_t take = (size_t)n;
    if (*len + take + 1 > cap) {
        take = *len + 1 < cap ? cap - 1 - *len : 0;
        if (!drop)
            *over = true;
    }
    if (*len + take + 1 > *alloc) {
        size_t want = *alloc ? *alloc : 65536;
        while (want < *len + take + 1)
            want *= 2;
        if (want > cap)
            want = cap;
        char *b = realloc(*buf, want);
        if (!b) {
            *over = true;
            return true;
        }
        *buf = b;
        *alloc = want;
    }
    memcpy(*buf + *len, tmp, take);
    *len += take;
    (*buf)[*len] = 0;
    return true;
}

static void reap(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

int qemu_img_run(char *const argv[], const char *path, int seconds, size_t out_cap,
                 struct qemu_img_out *r, struct hv_err *err)
{
    memset(r, 0, sizeof(*r));
    int outp[2], errp[2];
    if (pipe2(outp, O_CLOEXEC) < 0)
        return hv_errf_errno(err, "%s: qemu-img %s", path, argv[1]);
    if (pipe2(errp, O_CLOEXEC) < 0) {
        close(outp[0]);
        close(outp[1]);
        return hv_errf_errno(err, "%s: qemu-img %s", path, argv[1]);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, "qemu-img", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(outp[1]);
    close(errp[1]);
    if (rc != 0) {
        close(outp[0]);
        close(errp[0]);
        return hv_errk(err, HV_ERR_UNSUPPORTED,
                       "%s: qemu-img (Debian's qemu-utils) reads a qcow2 image's tables for "
                       "hvprof, and cannot be run: %s",
                       path, strerror(rc));
    }
    char *ebuf = NULL;
    size_t elen = 0, ealloc = 0, oalloc = 0;
    bool late = false, over = false, o_open = true, e_open = true;
    /* A deadline on the clock, not a count of quiet polls: output that trickles forever must
     * not keep it alive. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t deadline_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + seconds * 1000ll;
    while ((o_open || e_open) && !over) {
        struct pollfd p[2] = {{.fd = o_open ? outp[0] : -1, .events = POLLIN},
                              {.fd = e_open ? errp[0] : -1, .events = POLLIN}};
        int n = poll(p, 2, 100);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0) {
            if (p[0].revents &&
                !drain(outp[0], &r->out, &r->out_len, &oalloc, out_cap, false, &over))
                o_open = false;
            if (p[1].revents &&
                !drain(errp[0], &ebuf, &elen, &ealloc, sizeof(r->errtext), true, &over))
                e_open = false;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 >= deadline_ms) {
            late = true;
            break;
        }
    }
    if (late || over)
        kill(pid, SIGKILL);
    close(outp[0]);
    close(errp[0]);
    reap(pid, &r->status);
    if (ebuf)
        memcpy(r->errtext, ebuf, elen + 1);
    free(ebuf);
    if (late) {
        qemu_img_out_free(r);
        return hv_errk(err, HV_ERR_LIMIT, "%s: qemu-img %s took over %d s", path, argv[1], seconds);
    }
    if (over) {
        qemu_img_out_free(r);
        return hv_errk(err, HV_ERR_LIMIT, "%s: qemu-img %s printed over %zu bytes", path, argv[1],
                       out_cap);
    }
    if (!r->out && !(r->out = calloc(1, 1)))
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    return 0;
}

void qemu_img_out_free(struct qemu_img_out *r)
{
    free(r->out);
    r->out = NULL;
    r->out_len = 0;
}
