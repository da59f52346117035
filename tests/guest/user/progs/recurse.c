/* recurse: deep frame-pointer chains. Each round descends `depth` (default 250) levels:
 *   main -> descend (depth+1 frames: depth, depth-1, ..., 0) -> recurse_leaf (4 work units)
 * until `seconds` pass. */
#include "libc.h"
#include "work.h"

NOINLINE uint64_t recurse_leaf(uint64_t x)
{
    for (int i = 0; i < 4; i++)
        x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t descend(long depth, uint64_t x)
{
    if (depth == 0)
        return recurse_leaf(x);
    uint64_t r = descend(depth - 1, x + (uint64_t)depth);
    KEEP(r);
    return r + 1;
}

int main(void)
{
    long depth = param("depth", 250);
    long seconds = param("seconds", 1);
    uint64_t deadline = now_us() + (uint64_t)seconds * 1000000;
    uint64_t x = 0, rounds = 0;
    while (now_us() < deadline) {
        x = descend(depth, x);
        rounds++;
    }
    printf("recurse: pid=%ld depth=%ld rounds=%lu check=%lx\n", getpid(), depth, rounds, x & 0xff);
    return rounds || !seconds ? 0 : 1;
}
