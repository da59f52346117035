/* hv_nofp: a dynamically linked PIE program built as distributions build most programs, at -O2
 * with -fomit-frame-pointer (RBP is an ordinary register here: only the DWARF call-frame
 * information in .eh_frame tells the frames apart). Three chains:
 *   main -> nofp_outer -> nofp_middle -> nofp_spin                    (the main thread)
 *   clone3 -> start_thread -> nofp_worker -> nofp_middle -> nofp_spin (a second thread)
 *   main -> nofp_sort -> qsort [glibc's internals] -> nofp_by_key -> nofp_key_spin
 * (a callback through glibc, itself built without frame pointers). Every call is followed by
 * work, so none is a tail call. */
#include <pthread.h>

#include "hvtest.h"

volatile unsigned long nofp_sink;
static long end_ms;

HV_NOINLINE unsigned long nofp_spin(unsigned long n)
{
    unsigned long acc = 0;
    for (unsigned long i = 0; i < n; i++)
        acc += i ^ nofp_sink;
    return acc;
}

HV_NOINLINE unsigned long nofp_middle(unsigned long n)
{
    volatile unsigned long buf[6] = {n};
    unsigned long r = nofp_spin(n + buf[0] % 3);
    nofp_sink += r;
    return r + 1;
}

HV_NOINLINE unsigned long nofp_outer(unsigned long n)
{
    unsigned long r = nofp_middle(n);
    nofp_sink++;
    return r;
}

HV_NOINLINE unsigned long nofp_key_spin(int a)
{
    unsigned long acc = 0;
    for (unsigned long i = 0; i < 2000; i++)
        acc += (unsigned long)a * i;
    return acc;
}

static HV_NOINLINE int nofp_by_key(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    nofp_sink += nofp_key_spin(a);
    return (a > b) - (a < b);
}

HV_NOINLINE unsigned long nofp_sort(void)
{
    int v[96];
    for (int i = 0; i < 96; i++)
        v[i] = (i * 53) % 96;
    qsort(v, 96, sizeof(v[0]), nofp_by_key);
    nofp_sink++;
    return (unsigned long)v[0];
}

static void *nofp_worker(void *arg)
{
    hv_announce("hv_nofp/worker");
    unsigned long r = 0;
    while (hv_now_ms() < end_ms)
        r += nofp_middle(40000);
    nofp_sink += r;
    return arg;
}

int main(int argc, char **argv)
{
    end_ms = hv_now_ms() + hv_duration_ms(argc, argv);
    hv_announce("hv_nofp");
    pthread_t t;
    if (pthread_create(&t, NULL, nofp_worker, NULL))
        return 1;
    unsigned long r = 0;
    while (hv_now_ms() < end_ms) {
        r += nofp_outer(40000);
        r += nofp_sort();
    }
    pthread_join(t, NULL);
    nofp_sink += r;
    return 0;
}
