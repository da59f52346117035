/* hv_blip: one of the thousands of short-lived processes of the test bed's churn scenario
 * (docs/identities.md): it works in blip_work for argv[1] microseconds (default 2000) and
 * exits, printing nothing (a console line per process would be most of the scenario's time).
 *   main -> blip_work -> blip_spin
 * Static, linked at an address of its own, like hv_busy. */
#include "hvtest.h"

volatile unsigned long blip_sink;

HV_NOINLINE void blip_spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        blip_sink += i;
}

HV_NOINLINE void blip_work(long us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        blip_spin(20000);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000L < us);
}

int main(int argc, char **argv)
{
    blip_work(argc > 1 ? atol(argv[1]) : 2000);
    return 0;
}
