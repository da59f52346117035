/* The guest libc: see libc.h. */
#include "libc.h"

extern void thread_start(void);

long write(const void *buf, size_t len)
{
    return guest_syscall(GUEST_SYS_WRITE, (long)buf, (long)len, 0, 0);
}

_Noreturn void exit(int status)
{
    guest_syscall(GUEST_SYS_EXIT, status, 0, 0, 0);
    __builtin_unreachable();
}

_Noreturn void thread_exit(void)
{
    guest_syscall(GUEST_SYS_THREAD_EXIT, 0, 0, 0, 0);
    __builtin_unreachable();
}

long yield(void)
{
    return guest_syscall(GUEST_SYS_YIELD, 0, 0, 0, 0);
}

long thread_create(void (*fn)(void *), void *arg, void *fs_base)
{
    return guest_syscall(GUEST_SYS_THREAD_CREATE, (long)fn, (long)arg, (long)fs_base,
                         (long)thread_start);
}

long thread_join(long tid)
{
    return guest_syscall(GUEST_SYS_THREAD_JOIN, tid, 0, 0, 0);
}

long spawn(const char *prog, long arg)
{
    return guest_syscall(GUEST_SYS_SPAWN, (long)prog, arg, 0, 0);
}

long wait_pid(long pid)
{
    return guest_syscall(GUEST_SYS_WAIT, pid, 0, 0, 0);
}

long set_fs_base(void *fs_base)
{
    return guest_syscall(GUEST_SYS_SET_FS, (long)fs_base, 0, 0, 0);
}

long getpid(void)
{
    return guest_syscall(GUEST_SYS_GETPID, 0, 0, 0, 0);
}

long instance(void)
{
    return guest_syscall(GUEST_SYS_INSTANCE, 0, 0, 0, 0);
}

long param(const char *name, long def)
{
    return guest_syscall(GUEST_SYS_PARAM, (long)name, def, 0, 0);
}

uint64_t tsc_hz(void)
{
    static uint64_t hz;
    if (!hz)
        hz = (uint64_t)guest_syscall(GUEST_SYS_TSC_HZ, 0, 0, 0, 0);
    return hz;
}

uint64_t now_us(void)
{
    return rdtsc() / (tsc_hz() / 1000000);
}

int printf(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(buf) - 1)
        n = sizeof(buf) - 1;
    write(buf, (size_t)n);
    return n;
}

void *memcpy(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    while (n--)
        *d++ = *s++;
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    char *d = dst;
    while (n--)
        *d++ = (char)c;
    return dst;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}
