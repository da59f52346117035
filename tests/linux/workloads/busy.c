/* hv_busy: a static, non-PIE program with two known chains in user mode (argv[1]: ms; argv[2]
 * "nice": at nice 10).
 *   main -> hot_a -> leaf_a -> spin     (2/3 of the work)
 *   main -> hot_b -> spin               (1/3)
 * Built with -O1 -fno-omit-frame-pointer: `spin` is a frameless leaf at -O1, which the
 * frame-pointer walker must see through (issue "user-space modules", leaf repair). */
#include "hvtest.h"

volatile unsigned long sink;

HV_NOINLINE void spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i;
}

HV_NOINLINE void leaf_a(unsigned long n)
{
    spin(n);
    sink++;
}

HV_NOINLINE void hot_a(unsigned long n)
{
    leaf_a(2 * n);
    sink++;
}

HV_NOINLINE void hot_b(unsigned long n)
{
    spin(n);
    sink++;
}

int main(int argc, char **argv)
{
    long start = hv_now_ms(), end = start + hv_duration_ms(argc, argv);
    /* "hv_busy MS nice": at nice 10, beside a loop it should not halve (the churn plan; the
     * guest's busybox has no nice applet). */
    if (argc > 2 && !strcmp(argv[2], "nice"))
        (void)setpriority(PRIO_PROCESS, 0, 10);
    hv_announce("hv_busy");
    unsigned long rounds = 0;
    while (hv_now_ms() < end) {
        hot_a(100000);
        hot_b(100000);
        rounds++;
    }
    /* The guest's own measure of the work it got done (BENCHMARKS.md, "Linux guests"). */
    printf("HVTEST result hv_busy rounds=%lu ms=%ld\n", rounds, hv_now_ms() - start);
    return 0;
}
