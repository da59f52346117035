#include "vmm/qcow/qcow_image.h"

#include <errno.h>
#include <fcntl.h>
#include <libqcow.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct qcow_image {
    libqcow_file_t *chain[QCOW_MAX_CHAIN]; /* [0] the image, then its backing files */
    unsigned n;
    uint64_t size;
    char what[512];
};

bool qcow_image_magic(const uint8_t head[4])
{
    return !memcmp(head, "QFI\xfb", 4);
}

/* libqcow's message for err, then freed. */
static int qcow_fail(struct hv_err *err, libqcow_error_t **e, const char *path, const char *what)
{
    char msg[256] = "";
    if (e && *e) {
        libqcow_error_sprint(*e, msg, sizeof(msg));
        libqcow_error_free(e);
        for (char *c = msg; *c; c++)
            if (*c == '\n')
                *c = ' '; /* libqcow's backtrace lines, as one */
    }
    return hv_errk(err, HV_ERR_CORRUPT, "%s: %s%s%.200s", path, what, msg[0] ? ": " : "", msg);
}

/* The backing file's path as QEMU resolves it: absolute, or relative to the image's directory. */
static int backing_path(libqcow_file_t *f, const char *image, char *out, size_t cap, bool *has,
                        struct hv_err *err)
{
    libqcow_error_t *e = NULL;
    size_t size = 0;
    int rc = libqcow_file_get_utf8_backing_filename_size(f, &size, &e);
    if (rc < 0)
        return qcow_fail(err, &e, image, "its backing file's name");
    *has = rc == 1 && size > 1;
    if (!*has)
        return 0;
    if (size > PATH_MAX)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: a backing file name of %zu bytes", image, size);
    char name[PATH_MAX + 1];
    if (libqcow_file_get_utf8_backing_filename(f, (uint8_t *)name, size, &e) != 1)
        return qcow_fail(err, &e, image, "its backing file's name");
    name[size - 1] = 0;
    if (strlen(name) + 1 != size || !name[0])
        return hv_errk(err, HV_ERR_CORRUPT, "%s: its backing file's name is not a path", image);
    if (name[0] == '/') {
        if (strlen(name) >= cap)
            return hv_errk(err, HV_ERR_LIMIT, "%s: its backing file's path is too long", image);
        memcpy(out, name, strlen(name) + 1);
        return 0;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", image);
    if (snprintf(out, cap, "%s/%s", dirname(dir), name) >= (int)cap)
        return hv_errk(err, HV_ERR_LIMIT, "%s: its backing file's path is too long", image);
    return 0;
}

/* QEMU's own consistency check of one image of the chain (`qemu-img check`, a process of its
 * own) before libqcow reads it: libqcow trusts the header and tables more than a hostile image
 * deserves (qcow_image_fuzz found a heap overflow in its reads of an image whose header claims
 * an impossible size, which QEMU refuses to open). Each image alone (its backing file not
 * opened: the chain is walked here, with its loops refused first, as a check of a looping
 * chain would not end), within QCOW_CHECK_SECONDS. Exit status 0 (clean) or 3 (leaked
 * clusters: space lost, data intact) passes; 1 (not checked) and 2 (corrupt) refuse, with
 * QEMU's words. */
#define QCOW_CHECK_SECONDS 120

static int qemu_check(const char *path, struct hv_err *err)
{
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
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return hv_errf_errno(err, "%s: qemu-img check", path);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* -U: the image's locks are judged by the block device (image_lock.h), not here. */
    char *argv[] = {"qemu-img", "check", "-q", "-U", spec, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "qemu-img", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        return hv_errk(err, HV_ERR_UNSUPPORTED,
                       "%s: qemu-img (Debian's qemu-utils) checks a qcow2 image before hvprof "
                       "reads it, and cannot be run: %s",
                       path, strerror(rc));
    }
    char out[512] = "";
    size_t got = 0;
    bool late = false;
    for (int waited_ms = 0;;) {
        struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0) {
            char tmp[256];
            ssize_t n = read(pipefd[0], tmp, sizeof(tmp));
            if (n == 0 || (n < 0 && errno != EINTR))
                break; /* the child closed its output: it is ending */
            for (ssize_t i = 0; i < n && got + 1 < sizeof(out); i++)
                out[got++] = tmp[i];
        } else if ((waited_ms += 100) >= QCOW_CHECK_SECONDS * 1000) {
            late = true;
            kill(pid, SIGKILL);
            break;
        }
    }
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (late)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: QEMU's check of the image took over %d s", path,
                       QCOW_CHECK_SECONDS);
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3))
        return 0;
    out[got] = 0;
    out[strcspn(out, "\n")] = 0;
    /* "qemu-img: Could not open 'json:{...}': Image is too big": QEMU's reason, after the name. */
    const char *why = strstr(out, "}': ")              ? strstr(out, "}': ") + 4
                      : strncmp(out, "qemu-img: ", 10) ? out
                                                       : out + 10;
    return hv_errk(err, HV_ERR_CORRUPT, "%s: QEMU finds the image %s%s%.200s", path,
                   WIFEXITED(status) && WEXITSTATUS(status) == 2 ? "corrupt" : "unreadable",
                   why[0] ? ": " : "", why);
}

static int open_one(libqcow_file_t **out, const char *path, struct hv_err *err)
{
    if (qemu_check(path, err) < 0)
        return -1;
    libqcow_error_t *e = NULL;
    libqcow_file_t *f = NULL;
    uint32_t method = 0;
    if (libqcow_file_initialize(&f, &e) != 1)
        return qcow_fail(err, &e, path, "libqcow");
    if (libqcow_file_open(f, path, libqcow_get_access_flags_read(), &e) != 1) {
        libqcow_file_free(&f, NULL);
        return qcow_fail(err, &e, path, "not a qcow image libqcow can read");
    }
    if (libqcow_file_get_encryption_method(f, &method, &e) != 1 ||
        method != LIBQCOW_ENCRYPTION_METHOD_NONE) {
        libqcow_error_free(&e);
        libqcow_file_close(f, NULL);
        libqcow_file_free(&f, NULL);
        return hv_errk(err, HV_ERR_UNSUPPORTED, "%s: an encrypted qcow image", path);
    }
    *out = f;
    return 0;
}

int qcow_image_open(struct qcow_image **out, const char *path, struct hv_err *err)
{
    struct qcow_image *q = calloc(1, sizeof(*q));
    if (!q)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    struct stat seen[QCOW_MAX_CHAIN];
    char cur[PATH_MAX], next[PATH_MAX];
    snprintf(cur, sizeof(cur), "%s", path);
    int at = snprintf(q->what, sizeof(q->what), "qcow2");
    for (;;) {
        struct stat st;
        if (stat(cur, &st) < 0) {
            hv_errf_errno(err, "%s: backing file %s", path, cur);
            goto fail;
        }
        for (unsigned i = 0; i < q->n; i++)
            if (seen[i].st_dev == st.st_dev && seen[i].st_ino == st.st_ino) {
                hv_errk(err, HV_ERR_CORRUPT, "%s: its backing chain comes back to %s (a loop)",
                        path, cur);
                goto fail;
            }
        if (q->n == QCOW_MAX_CHAIN) {
            hv_errk(err, HV_ERR_LIMIT, "%s: a backing chain longer than %u images", path,
                    QCOW_MAX_CHAIN);
            goto fail;
        }
        FILE *fp = fopen(cur, "rb");
        uint8_t head[4] = {0};
        bool is_qcow = fp && fread(head, 1, 4, fp) == 4 && qcow_image_magic(head);
        if (fp)
            fclose(fp);
        if (!is_qcow) {
            hv_errk(err, HV_ERR_UNSUPPORTED,
                    "%s: backing file %s is not a qcow image (libqcow reads qcow backing files "
                    "only: qemu-img convert -O raw %s IMAGE.raw makes one raw image)",
                    path, cur, path);
            goto fail;
        }
        if (open_one(&q->chain[q->n], cur, err) < 0)
            goto fail;
        seen[q->n++] = st;
        bool has = false;
        if (backing_path(q->chain[q->n - 1], cur, next, sizeof(next), &has, err) < 0)
            goto fail;
        if (!has)
            break;
        const char *base = strrchr(next, '/') ? strrchr(next, '/') + 1 : next;
        if (at < (int)sizeof(q->what))
            at += snprintf(q->what + at, sizeof(q->what) - (size_t)at, "%s%.64s",
                           q->n == 1 ? ", backing chain: " : " <- ", base);
        snprintf(cur, sizeof(cur), "%s", next);
    }
    /* Each image reads what it does not hold from the next (libqcow's parent file). */
    libqcow_error_t *e = NULL;
    for (unsigned i = 0; i + 1 < q->n; i++)
        if (libqcow_file_set_parent_file(q->chain[i], q->chain[i + 1], &e) != 1) {
            qcow_fail(err, &e, path, "its backing file");
            goto fail;
        }
    size64_t size = 0;
    if (libqcow_file_get_media_size(q->chain[0], &size, &e) != 1) {
        qcow_fail(err, &e, path, "its size");
        goto fail;
    }
    q->size = size;
    *out = q;
    return 0;
fail:
    qcow_image_close(q);
    return -1;
}

uint64_t qcow_image_size(const struct qcow_image *q)
{
    return q->size;
}

const char *qcow_image_describe(const struct qcow_image *q)
{
    return q->what;
}

bool qcow_image_readv(struct qcow_image *q, const struct iovec *iov, int n, uint64_t off,
                      struct hv_err *err)
{
    for (int i = 0; i < n; i++) {
        if (off > q->size || iov[i].iov_len > q->size - off) {
            hv_errk(err, HV_ERR_LIMIT, "a read past the image's end");
            return false;
        }
        libqcow_error_t *e = NULL;
        ssize_t got = libqcow_file_read_buffer_at_offset(q->chain[0], iov[i].iov_base,
                                                         iov[i].iov_len, (off64_t)off, &e);
        if (got < 0 || (size_t)got != iov[i].iov_len) {
            qcow_fail(err, &e, "qcow image", "a read");
            return false;
        }
        off += iov[i].iov_len;
    }
    return true;
}

void qcow_image_close(struct qcow_image *q)
{
    if (!q)
        return;
    for (unsigned i = 0; i < q->n; i++) {
        libqcow_file_close(q->chain[i], NULL);
        libqcow_file_free(&q->chain[i], NULL);
    }
    free(q);
}
