/* hv_libcall: a dynamically linked non-PIE program whose time goes into libc:
 *   main -> sort_round -> qsort -> ... -> cmp_u32   (a callback called from libc)
 *   main -> copy_round -> memcpy
 */
#include <string.h>

#include "hvtest.h"

#define N 4096
static unsigned buf[N], tmp[N];
static unsigned char big_a[1 << 16], big_b[1 << 16];
volatile unsigned long sink;

HV_NOINLINE static int cmp_u32(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

HV_NOINLINE static void sort_round(unsigned seed)
{
    for (unsigned i = 0; i < N; i++)
        tmp[i] = (seed = seed * 1103515245u + 12345u);
    qsort(tmp, N, sizeof(tmp[0]), cmp_u32);
    sink += tmp[N / 2];
}

HV_NOINLINE static void copy_round(void)
{
    for (int i = 0; i < 16; i++) {
        memcpy(big_b, big_a, sizeof(big_a));
        memcpy(big_a, big_b, sizeof(big_a));
    }
    sink += big_a[7];
}

int main(int argc, char **argv)
{
    long end = hv_now_ms() + hv_duration_ms(argc, argv);
    hv_announce("hv_libcall");
    unsigned seed = 1;
    while (hv_now_ms() < end) {
        sort_round(seed++);
        copy_round();
    }
    memcpy(buf, tmp, sizeof(buf));
    return 0;
}
