/* The test guest's tiny libc: system call wrappers, string helpers, printf-lite, time. */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_abi.h"
#include "lib/fmt.h"

#define NOINLINE __attribute__((noinline))

long guest_syscall(long nr, long a0, long a1, long a2, long a3);

long write(const void *buf, size_t len);
_Noreturn void exit(int status);
_Noreturn void thread_exit(void);
long yield(void);
long thread_create(void (*fn)(void *), void *arg, void *fs_base); /* returns tid or < 0 */
long thread_join(long tid);
long set_fs_base(void *fs_base);
long spawn(const char *prog, long arg); /* a new process of `prog`: its pid, or < 0 */
long wait_pid(long pid);                /* its exit status, once it ended */
long getpid(void);
long instance(void);
long param(const char *name, long def); /* name=V from the guest command line */
uint64_t tsc_hz(void);

/* Time: rdtsc at CPL 3 (native, no exit) converted with the kernel's boot-time calibration
 * against the LAPIC timer (GUEST_SYS_TSC_HZ). */
static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
uint64_t now_us(void);

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
size_t strlen(const char *s);

/* Read the 8 bytes at %fs:off (the thread's FS base + off). */
static inline uint64_t fs_read64(uint64_t off)
{
    uint64_t v;
    __asm__ volatile("mov %%fs:(%1), %0" : "=r"(v) : "r"(off));
    return v;
}
