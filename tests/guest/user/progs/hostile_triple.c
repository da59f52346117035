/* hostile_triple: works in user mode for `seconds` (_start -> main -> triple_work ->
 * triple_leaf), then spins 50 ms in the kernel (so a profiler has a continuation open), then asks
 * the kernel to load an empty IDT and fault: a triple fault stops the whole machine
 * (KVM_EXIT_SHUTDOWN). It never returns; its last console line is "hostile_triple: ... going
 * down". */
#include "hostile_common.h"

NOINLINE uint64_t triple_leaf(uint64_t x)
{
    x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t triple_work(uint64_t end)
{
    uint64_t x = 5;
    while (now_us() < end)
        x = triple_leaf(x);
    return x;
}

int main(void)
{
    uint64_t x = triple_work(deadline_us());
    printf("hostile_triple: pid=%ld x=%lu going down\n", getpid(), x & 0xff);
    hostile(GUEST_HOSTILE_KSPIN, 50000, 0, 0);
    hostile(GUEST_HOSTILE_TRIPLE, 0, 0, 0);
    printf("hostile_triple: still alive\n");
    return 1;
}
