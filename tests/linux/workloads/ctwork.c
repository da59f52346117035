/* hv_ctwork: a container's program (hvtest.plan=containers, docs/containers.md), static so that
 * its container's root file system is this file alone. argv[1]: ms; argv[2]: the container's
 * name, which it prints with what it sees of itself (its pid in its own pid namespace);
 * argv[3]: a file whose appearance means it was moved to another cgroup. It spins in
 *   main -> ct_before -> ct_spin     until the file exists (looked for every 10 ms),
 *   main -> ct_after  -> ct_spin     from then on,
 * so that its samples say on which side of the move they were taken. Built with -O1
 * -fno-omit-frame-pointer like the other workloads. */
#include "hvtest.h"

volatile unsigned long sink;

HV_NOINLINE void ct_spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i;
}

HV_NOINLINE void ct_before(unsigned long n)
{
    ct_spin(n);
    sink++;
}

HV_NOINLINE void ct_after(unsigned long n)
{
    ct_spin(n);
    sink++;
}

int main(int argc, char **argv)
{
    long start = hv_now_ms(), end = start + hv_duration_ms(argc, argv), looked = 0;
    const char *name = argc > 2 ? argv[2] : "?", *flag = argc > 3 ? argv[3] : NULL;
    printf("HVTEST ct %s inside pid=%d\n", name, (int)getpid());
    fflush(stdout);
    int moved = 0;
    long now;
    while ((now = hv_now_ms()) < end) {
        if (flag && !moved && now - looked >= 10) {
            looked = now;
            moved = access(flag, F_OK) == 0;
        }
        if (moved)
            ct_after(20000);
        else
            ct_before(20000);
    }
    printf("HVTEST ct %s done moved=%d\n", name, moved);
    fflush(stdout);
    return 0;
}
