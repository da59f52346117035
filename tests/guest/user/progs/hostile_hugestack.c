/* hostile_hugestack: a stack pivoted into a 2 MiB page. The program maps one fresh 2 MiB page
 * in the low hostile region and runs `huge_main -> huge_work -> huge_leaf` there (real frames,
 * work units) with RSP near the top of the huge page; huge_main's saved RBP points back to the
 * ordinary stack, hundreds of GiB away. A frame-pointer walk must translate the 2 MiB page and
 * stop at the pivot with a reason (the old stack is outside any sane stack window). */
#include "hostile_common.h"

#define HUGE_VA (GUEST_HOSTILE_VA_BASE + (32ull << 30)) /* 2 MiB aligned, PML4 slot 192 */

struct huge_run {
    uint64_t end_us, rounds, x;
};

NOINLINE uint64_t huge_leaf(uint64_t x)
{
    x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t huge_work(uint64_t x)
{
    x = huge_leaf(x);
    KEEP(x);
    return x;
}

NOINLINE void huge_main(void *arg)
{
    struct huge_run *run = arg;
    uint64_t x = 7;
    do {
        x = huge_work(x);
        run->rounds++;
    } while (now_us() < run->end_us);
    run->x = x;
}

int main(void)
{
    struct huge_run run = {deadline_us(), 0, 0};
    long r = hostile(GUEST_HOSTILE_MAP, (long)HUGE_VA, 0,
                     GUEST_HOSTILE_MAP_FRESH | GUEST_HOSTILE_MAP_HUGE);
    uint64_t sp_in = 0;
    if (r == 0) {
        /* Prove the page is there and writable before running on it. */
        *(volatile uint64_t *)(HUGE_VA + 0x1ff000) = 0x5a;
        sp_in = *(volatile uint64_t *)(HUGE_VA + 0x1ff000);
        call_on_stack(huge_main, &run, HUGE_VA + 0x200000 - 64);
    }
    int ok = r == 0 && sp_in == 0x5a && run.rounds > 0;
    printf("hostile_hugestack: pid=%ld map=%ld rounds=%lu ok=%d\n", getpid(), r, run.rounds, ok);
    return ok ? 0 : 1;
}
