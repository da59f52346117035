/* syscall: time at CPL 0 under a known user stack. Loops until `seconds` (default 1) pass:
 *   main -> do_kernel_work -> sys_kbusy --int3--> [kernel] trap_dispatch -> syscall_dispatch ->
 *   ksys_kbusy -> kbusy_level1 -> kbusy_level2 -> kbusy_spin
 * each call spinning `kbusy_us` (default 2000) microseconds in the kernel. */
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

NOINLINE long do_kernel_work(long us)
{
    long r = sys_kbusy(us);
    KEEP(r);
    return r;
}

int main(void)
{
    long us = param("kbusy_us", 2000);
    uint64_t deadline = now_us() + (uint64_t)param("seconds", 1) * 1000000;
    long calls = 0, errors = 0;
    while (now_us() < deadline) {
        if (do_kernel_work(us))
            errors++;
        calls++;
    }
    printf("syscall: pid=%ld kbusy_calls=%ld kbusy_us=%ld errors=%ld\n", getpid(), calls, us,
           errors);
    return errors ? 1 : 0;
}
