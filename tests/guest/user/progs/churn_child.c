/* churn_child: one of the short-lived processes `churn` spawns (docs/test-guest.md, "Processes
 * that come and go"): works in child_work for churn_us microseconds (GUEST_SYS_PARAM, default
 * 300), then exits 0. Its samples' ground truth is the chain main -> child_work -> child_leaf. */
#include "libc.h"
#include "work.h"

NOINLINE uint64_t child_leaf(uint64_t x)
{
    x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t child_work(uint64_t until_us)
{
    uint64_t x = (uint64_t)instance() + 1;
    do
        x = child_leaf(x);
    while (now_us() < until_us);
    KEEP(x);
    return x;
}

int main(void)
{
    uint64_t us = (uint64_t)param("churn_us", 300);
    KEEP(child_work(now_us() + us));
    return 0;
}
