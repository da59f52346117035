/* Shared by the guest workloads of the Linux test bed (docs/linux.md, "Test bed"). Each program
 * announces itself on the console as
 *     HVTEST proc <name> pid=<pid> tid=<tid>
 * so the tests can compare what hvprof recorded with what the guest itself says, and runs for a
 * given number of milliseconds of wall time (not a loop count: guest speed under emulation
 * varies by an order of magnitude with host load). Built by Debian's gcc on the host
 * (tests/linux/prepare.sh), never by the project's own build. */
#pragma once

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline long hv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The process whose CPU time hv_report_cpu prints: a forked child inherits the atexit handler and
 * must not report its parent's pid. */
static int hv_cpu_pid;

/* "HVTEST cpu pid=P user_ms=U sys_ms=S" at exit: the guest's own account of the CPU time the
 * program got, which the tests weigh the samples it should have against (a program the guest
 * scheduler gave little time has few samples, and that is no fault of hvprof's). */
static inline void hv_report_cpu(void)
{
    struct rusage ru;
    if ((int)getpid() != hv_cpu_pid || getrusage(RUSAGE_SELF, &ru))
        return;
    printf("HVTEST cpu pid=%d user_ms=%ld sys_ms=%ld\n", hv_cpu_pid,
           (long)ru.ru_utime.tv_sec * 1000L + (long)ru.ru_utime.tv_usec / 1000L,
           (long)ru.ru_stime.tv_sec * 1000L + (long)ru.ru_stime.tv_usec / 1000L);
    fflush(stdout);
}

/* "HVTEST proc NAME pid=P tid=T", then one "HVTEST map P START-END PATH" per executable
 * mapping of the process (from /proc/self/maps): the guest's own account of which addresses are
 * whose, for the tests to compare with what hvprof recorded. */
static inline void hv_announce(const char *name)
{
    int pid = (int)getpid();
    if (!hv_cpu_pid && !strchr(name, '/')) {
        hv_cpu_pid = pid;
        atexit(hv_report_cpu);
    }
    printf("HVTEST proc %s pid=%d tid=%ld\n", name, pid, (long)syscall(SYS_gettid));
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char perms[8], path[400] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %399s", &lo, &hi, perms, path) >= 3 &&
            perms[2] == 'x')
            printf("HVTEST map %d %lx-%lx %s\n", pid, lo, hi, path[0] ? path : "[anon]");
    }
    if (maps)
        fclose(maps);
    fflush(stdout);
}

/* Run time from argv[1] in ms (default 2000). */
static inline long hv_duration_ms(int argc, char **argv)
{
    long ms = argc > 1 ? atol(argv[1]) : 2000;
    return ms > 0 ? ms : 2000;
}

#define HV_NOINLINE __attribute__((noinline))
