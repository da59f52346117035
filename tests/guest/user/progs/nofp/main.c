/* nofp: one function without a frame pointer (nofp_middle, in middle.nofp.c, built with
 * -fomit-frame-pointer). Each round until `seconds` pass:
 *   main -> nofp_outer -> nofp_middle (1 work unit itself) -> nofp_leaf (1 work unit)
 * A frame-pointer walk cannot see nofp_middle's frame: for samples in nofp_leaf it reports
 * main -> nofp_middle -> nofp_leaf (nofp_outer's return address is never pushed into an RBP
 * frame that the walk visits... see docs/test-guest.md for the exact expected walks). */
#include "libc.h"
#include "work.h"

uint64_t nofp_middle(uint64_t x);

NOINLINE uint64_t nofp_leaf(uint64_t x)
{
    x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t nofp_outer(uint64_t x)
{
    x = nofp_middle(x);
    KEEP(x);
    return x;
}

int main(void)
{
    long seconds = param("seconds", 1);
    uint64_t deadline = now_us() + (uint64_t)seconds * 1000000;
    uint64_t x = 3, rounds = 0;
    while (now_us() < deadline) {
        x = nofp_outer(x);
        rounds++;
    }
    printf("nofp: pid=%ld rounds=%lu check=%lx\n", getpid(), rounds, x & 0xff);
    return rounds || !seconds ? 0 : 1;
}
