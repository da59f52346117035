/* hv_threads: a dynamically linked PIE program with two worker threads, each on its own chain:
 *   start_thread -> left_worker -> left_loop -> spin_left
 *   start_thread -> right_worker -> right_loop -> spin_right
 * while the main thread waits in pthread_join (kernel). */
#include <pthread.h>

#include "hvtest.h"

static long end_ms;
volatile unsigned long sink;

HV_NOINLINE static void spin_left(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i;
}

HV_NOINLINE static void left_loop(void)
{
    spin_left(50000);
    sink++;
}

HV_NOINLINE static void spin_right(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink ^= i;
}

HV_NOINLINE static void right_loop(void)
{
    spin_right(50000);
    sink++;
}

static void *left_worker(void *arg)
{
    hv_announce("hv_threads/left");
    while (hv_now_ms() < end_ms)
        left_loop();
    return arg;
}

static void *right_worker(void *arg)
{
    hv_announce("hv_threads/right");
    while (hv_now_ms() < end_ms)
        right_loop();
    return arg;
}

int main(int argc, char **argv)
{
    end_ms = hv_now_ms() + hv_duration_ms(argc, argv);
    hv_announce("hv_threads");
    pthread_t a, b;
    if (pthread_create(&a, NULL, left_worker, NULL) || pthread_create(&b, NULL, right_worker, NULL))
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
