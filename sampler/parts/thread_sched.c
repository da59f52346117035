/* /proc/.../schedstat: a vCPU thread's own at its start and stop, and the drain thread's reads of
 * it as it runs (sampler/sources/steal/steal_timeline.c); never at an exit. */
#include "sampler/parts/thread_sched.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* One decimal field and the blank after it; false if there is none or it overflows. */
static bool field(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (s == end || *s < '0' || *s > '9')
        return false;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (s < end && *s != ' ' && *s != '\n')
        return false;
    while (s < end && (*s == ' ' || *s == '\n'))
        s++;
    *p = s;
    *out = v;
    return true;
}

int thread_sched_parse(const char *text, size_t len, struct thread_sched *out)
{
    const char *p = text, *end = text + len;
    uint64_t run, wait, slices;
    if (!field(&p, end, &run) || !field(&p, end, &wait) || !field(&p, end, &slices) || p != end)
        return -1;
    out->run_ns = run;
    out->wait_ns = wait;
    return 0;
}

static int read_path(const char *path, struct thread_sched *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[128];
    ssize_t n;
    do
        n = read(fd, buf, sizeof(buf));
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0 || (size_t)n == sizeof(buf))
        return -1;
    return thread_sched_parse(buf, (size_t)n, out);
}

int thread_sched_self(struct thread_sched *out)
{
    return read_path("/proc/thread-self/schedstat", out);
}

int thread_sched_open_self(void)
{
    return open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

int thread_sched_read(int fd, struct thread_sched *out)
{
    char buf[128];
    ssize_t n;
    do
        n = pread(fd, buf, sizeof(buf), 0); /* a proc file is made anew at offset 0 */
    while (n < 0 && errno == EINTR);
    if (n <= 0 || (size_t)n == sizeof(buf))
        return -1;
    return thread_sched_parse(buf, (size_t)n, out);
}

int thread_sched_of(pid_t tid, struct thread_sched *out)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
    return read_path(path, out);
}
