/* hostile_kfp: kernel frame-pointer chains a profiler must not follow blindly. Each round makes
 * the kernel spin at CPL 0 for 20 ms (GUEST_HOSTILE_KSPIN) with RBP = one bad value:
 *   loop (a kernel-stack frame pointing at itself), down (pointing below itself), user (a user
 *   address: the wrong half for a kernel walk), noncanon, misaligned, mmio (the direct map's view
 *   of the IOAPIC), pastmap (past the 4 GiB direct map: not mapped), ktext (kernel code read as
 *   frames). Meanwhile the user stack is main -> kfp_round -> the system call, waiting for a
 *   deferred (continuation) walk; 2 ms of user work (kfp_user) between rounds makes the thread
 *   known to run in user mode. `kind=N` runs one kind only (default -1: all in turn). */
#include "hostile_common.h"

enum { K_LOOP, K_DOWN, K_USER, K_NONCANON, K_MISALIGNED, K_MMIO, K_PASTMAP, K_KTEXT, NKINDS };

NOINLINE uint64_t kfp_user(uint64_t x)
{
    uint64_t end = now_us() + 2000;
    while (now_us() < end)
        x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE long kfp_round(int k)
{
    struct frame user_fr = {0, 0};
    static const uint64_t rbp[NKINDS] = {
        [K_LOOP] = GUEST_HOSTILE_KFP_LOOP,    [K_DOWN] = GUEST_HOSTILE_KFP_DOWN,
        [K_NONCANON] = 0x8000000000000000ull, [K_MISALIGNED] = 0xffffffff80100004ull,
        [K_MMIO] = 0xffff8000fec00000ull,    /* DMAP_BASE + IOAPIC */
        [K_PASTMAP] = 0xffff801000000000ull, /* DMAP_BASE + 64 GiB */
        [K_KTEXT] = 0xffffffff80100000ull,
    };
    uint64_t v = k == K_USER ? (uint64_t)&user_fr : rbp[k];
    long r = hostile(GUEST_HOSTILE_KSPIN, 20000, (long)v, 0);
    KEEP(user_fr.next);
    return r;
}

int main(void)
{
    uint64_t end = deadline_us();
    long only = param("kind", -1);
    uint64_t rounds = 0, errors = 0;
    int k = only >= 0 && only < NKINDS ? (int)only : 0;
    uint64_t x = 1;
    do {
        x = kfp_user(x);
        errors += kfp_round(k) != 0;
        rounds++;
        if (only < 0)
            k = (k + 1) % NKINDS;
    } while (now_us() < end);
    KEEP(x);
    printf("hostile_kfp: pid=%ld kinds=%d rounds=%lu errors=%lu ok=%d\n", getpid(),
           only >= 0 ? 1 : NKINDS, rounds, errors, errors == 0);
    return errors ? 1 : 0;
}
