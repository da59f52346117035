/* hostile_cpl0: stays at CPL 0 for seconds. Each call spins in the kernel for `cpl0_us`
 * (default 2 s) with interrupts off, through the known chain ksys... kbusy_level1 ->
 * kbusy_level2 -> kbusy_spin, under the user stack _start -> main -> cpl0_call. A profiler's
 * deferred user walks (continuations) cannot complete meanwhile and must be abandoned on time.
 * Runs max(1, seconds / cpl0_us) calls, each after 100 ms of user work (cpl0_user), so the
 * thread is known to run in user mode when the long kernel stay begins. */
#include "hostile_common.h"

NOINLINE uint64_t cpl0_user(uint64_t x)
{
    uint64_t end = now_us() + 100000;
    while (now_us() < end)
        x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE long cpl0_call(uint64_t us)
{
    long r = hostile(GUEST_HOSTILE_KSPIN, (long)us, 0, 0);
    KEEP(r);
    return r;
}

int main(void)
{
    uint64_t us = (uint64_t)param("cpl0_us", 2000000);
    uint64_t calls = (uint64_t)param("seconds", 1) * 1000000 / (us ? us : 1);
    if (calls == 0)
        calls = 1;
    long errors = 0;
    uint64_t t0 = now_us();
    uint64_t x = 9;
    for (uint64_t i = 0; i < calls; i++) {
        x = cpl0_user(x);
        errors += cpl0_call(us) != 0;
    }
    KEEP(x);
    printf("hostile_cpl0: pid=%ld calls=%lu us_each=%lu elapsed_us=%lu errors=%ld ok=%d\n",
           getpid(), calls, us, now_us() - t0, errors, errors == 0);
    return errors ? 1 : 0;
}
