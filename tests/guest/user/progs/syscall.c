/* syscall: time at CPL 0 under a known user stack. Loops until `seconds` (default 1) pass:
 *   main -> do_kernel_work -> sys_kbusy --int3--> [kernel] trap_dispatch -> syscall_dispatch ->
 *   ksys_kbusy -> kbusy_level1 -> kbusy_level2 -> kbusy_spin
 * each call spinning `kbusy_us` (default 2000) microseconds in the kernel, then, like a real
 * program using what the call returned, `user_units` work units (default 25, ~1 ms) in user mode:
 *   main -> do_kernel_work -> digest_result
 * That user time is when a hypervisor-side profiler sees the thread back in user mode and can
 * complete its kernel-mode samples with the user stack (docs/sampling.md). */
#include "libc.h"
#include "work.h"

NOINLINE long sys_kbusy(long us)
{
    long r;
    /* The int3 is inline here (not in guest_syscall) so the user IP at the trap is in sys_kbusy. */
    __asm__ volatile("int3" : "=a"(r) : "a"((long)GUEST_SYS_KBUSY), "D"(us) : "memory");
    KEEP(r);
    return r;
}

NOINLINE uint64_t digest_result(long units)
{
    uint64_t x = (uint64_t)units;
    for (long i = 0; i < units; i++)
        x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE long do_kernel_work(long us, long units)
{
    long r = sys_kbusy(us);
    KEEP(r);
    digest_result(units);
    return r;
}

int main(void)
{
    long us = param("kbusy_us", 2000);
    long units = param("user_units", 25);
    uint64_t deadline = now_us() + (uint64_t)param("seconds", 1) * 1000000;
    long calls = 0, errors = 0;
    while (now_us() < deadline) {
        if (do_kernel_work(us, units))
            errors++;
        calls++;
    }
    printf("syscall: pid=%ld kbusy_calls=%ld kbusy_us=%ld errors=%ld\n", getpid(), calls, us,
           errors);
    return errors ? 1 : 0;
}
