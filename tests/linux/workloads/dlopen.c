/* hv_dlopen: a PIE program built at -O2 that loads libhvplug.so with dlopen() after it started
 * (so its code appears in the process's address space late) and spends its time there:
 *   main -> run_plugin -> plug_work -> plug_loop -> plug_spin */
#include <dlfcn.h>

#include "hvtest.h"

volatile unsigned long sink;

HV_NOINLINE static void run_plugin(void (*work)(long, long (*)(void)), long end_ms)
{
    work(end_ms, hv_now_ms);
    sink++;
}

int main(int argc, char **argv)
{
    long end = hv_now_ms() + hv_duration_ms(argc, argv);
    void *h = dlopen("/lib/hvtest/libhvplug.so", RTLD_NOW);
    hv_announce("hv_dlopen"); /* after dlopen: the library's mapping is listed too */
    void (*work)(long, long (*)(void)) =
        h ? (void (*)(long, long (*)(void)))dlsym(h, "plug_work") : NULL;
    if (!work) {
        printf("HVTEST error hv_dlopen: %s\n", dlerror());
        return 1;
    }
    run_plugin(work, end);
    return 0;
}
