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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline long hv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* "HVTEST proc NAME pid=P tid=T", then one "HVTEST map P START-END PATH" per executable
 * mapping of the process (from /proc/self/maps): the guest's own account of which addresses are
 * whose, for the tests to compare with what hvprof recorded. */
static inline void hv_announce(const char *name)
{
    int pid = (int)getpid();
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
