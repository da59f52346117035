/* See guest_run.h. */
#include "tests/integration/guest_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *guest_build_path(const char *rel)
{
    static char buf[1024];
    const char *exe = getenv("HVPROF_EXE");
    if (exe && !strcmp(rel, "cli/hvprof"))
        return exe;
    const char *dir = getenv("HVPROF_BINARY_DIR");
    snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : GUEST_RUN_DEFAULT_BINARY_DIR, rel);
    return buf;
}

char *guest_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

int guest_run(struct guest_run *r, unsigned vcpus, const char *cmdline)
{
    return guest_run_echo(r, vcpus, cmdline, true);
}

int guest_run_echo(struct guest_run *r, unsigned vcpus, const char *cmdline, bool echo)
{
    memset(r, 0, sizeof(*r));
    char kernel[1024], initrd[1024], hvprof[1024], ncpu[16];
    snprintf(kernel, sizeof(kernel), "%s", guest_build_path("tests/guest/hvprof-guest.elf"));
    snprintf(initrd, sizeof(initrd), "%s", guest_build_path("tests/guest/hvprof-guest.cpio"));
    snprintf(hvprof, sizeof(hvprof), "%s", guest_build_path("cli/hvprof"));
    snprintf(ncpu, sizeof(ncpu), "%u", vcpus);
    snprintf(r->console_path, sizeof(r->console_path), "/tmp/hvprof-guest-console.XXXXXX");
    int fd = mkstemp(r->console_path);
    if (fd < 0)
        return -1;
    close(fd);

    char *argv[] = {hvprof,      "run",           "--kernel",  kernel,
                    "--initrd",  initrd,          "--vcpus",   ncpu,
                    "--mem",     "256M",          "--cmdline", (char *)cmdline,
                    "--console", r->console_path, "--timeout", "240s",
                    NULL};
    if (echo) {
        fprintf(stderr, "running:");
        for (char **a = argv; *a; a++)
            fprintf(stderr, " %s", *a);
        fprintf(stderr, "\n");
    }
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execv(hvprof, argv);
        fprintf(stderr, "exec %s: %s\n", hvprof, strerror(errno));
        _exit(127);
    }
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return -1;
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    r->console = guest_read_file(r->console_path, &r->console_len);
    if (!r->console)
        return -1;
    /* Shown by ctest --output-on-failure: the whole console helps when an assertion fails. */
    if (echo)
        fprintf(stderr, "---- guest console (%u vCPUs, \"%s\"), hvprof status %d ----\n%s----\n",
                vcpus, cmdline, r->status, r->console);
    return 0;
}

void guest_run_free(struct guest_run *r)
{
    free(r->console);
    r->console = NULL;
    if (r->console_path[0])
        unlink(r->console_path);
}

static const char *next_line(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? nl + 1 : NULL;
}

const char *guest_line(const struct guest_run *r, const char *prefix, char *buf, size_t len)
{
    size_t plen = strlen(prefix);
    for (const char *p = r->console; p && *p; p = next_line(p)) {
        if (strncmp(p, prefix, plen))
            continue;
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n >= len)
            n = len - 1;
        memcpy(buf, p, n);
        buf[n] = '\0';
        return buf;
    }
    return NULL;
}

int guest_count_lines(const struct guest_run *r, const char *prefix)
{
    int n = 0;
    size_t plen = strlen(prefix);
    for (const char *p = r->console; p && *p; p = next_line(p))
        if (!strncmp(p, prefix, plen))
            n++;
    return n;
}

long guest_field(const char *line, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = line; (p = strstr(p, key)); p++) {
        if ((p == line || p[-1] == ' ') && p[klen] == '=')
            return strtol(p + klen + 1, NULL, 10);
    }
    return -1;
}
