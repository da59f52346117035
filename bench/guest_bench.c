/* bench_guest: the built-in test guest under `hvprof run` (no sampling).
 *   - boot: `seconds=0` runs (every default program starts and exits at once); the guest reports
 *     kernel_entry_to_user_us (its first instruction to the first iretq into CPL 3, by its
 *     calibrated TSC), and the host measures the whole run's wall time (VM creation to exit);
 *   - throughput: `progs=workload procs=1 seconds=S`, the workload's own units_per_sec; the
 *     same with procs=2 on 2 vCPUs (per process, should match one process alone).
 * Numbers only, never a failure on a number. `--quick`: fewer repetitions, 1-second runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "tests/integration/guest_run.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_boot(unsigned vcpus, int reps)
{
    double kus[32], wall[32];
    for (int i = 0; i < reps; i++) {
        struct guest_run r;
        double t0 = now_s();
        if (guest_run_echo(&r, vcpus, "seconds=0", false) || r.status != 0) {
            fprintf(stderr, "bench_guest: boot run failed (status %d)\n", r.status);
            guest_run_free(&r);
            return -1;
        }
        wall[i] = (now_s() - t0) * 1e3;
        char line[512];
        kus[i] = guest_line(&r, "hvprof-guest: summary ", line, sizeof(line))
                     ? (double)guest_field(line, "kernel_entry_to_user_us") / 1e3
                     : -1;
        guest_run_free(&r);
    }
    qsort(kus, (size_t)reps, sizeof(double), cmp_double);
    qsort(wall, (size_t)reps, sizeof(double), cmp_double);
    printf("boot  vcpus=%u reps=%d kernel_entry_to_user_ms median=%.1f min=%.1f max=%.1f  "
           "whole_run_wall_ms median=%.1f min=%.1f max=%.1f\n",
           vcpus, reps, kus[reps / 2], kus[0], kus[reps - 1], wall[reps / 2], wall[0],
           wall[reps - 1]);
    return 0;
}

static int bench_workload(unsigned vcpus, int procs, int seconds)
{
    char cmdline[128];
    snprintf(cmdline, sizeof(cmdline), "progs=workload procs=%d seconds=%d", procs, seconds);
    struct guest_run r;
    if (guest_run_echo(&r, vcpus, cmdline, false) || r.status != 0) {
        fprintf(stderr, "bench_guest: workload run failed (status %d)\n", r.status);
        guest_run_free(&r);
        return -1;
    }
    printf("work  vcpus=%u procs=%d seconds=%d units_per_sec:", vcpus, procs, seconds);
    for (const char *p = r.console; p && (p = strstr(p, "workload: pid=")); p++) {
        char line[512];
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
        printf(" %ld", guest_field(line, "units_per_sec"));
    }
    printf("\n");
    guest_run_free(&r);
    return 0;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    int reps = quick ? 3 : 9, seconds = quick ? 1 : 3;
    if (!hv_kvm_available()) {
        printf("bench_guest: no /dev/kvm, nothing measured\n");
        return 0;
    }
    int rc = 0;
    rc |= bench_boot(1, reps);
    rc |= bench_boot(2, reps);
    rc |= bench_workload(1, 1, seconds);
    rc |= bench_workload(2, 2, seconds);
    return rc ? 1 : 0;
}
