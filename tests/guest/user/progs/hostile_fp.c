/* hostile_fp: user frame-pointer chains that a profiler must not follow blindly. Each round
 * builds two frame records on its own stack (above the sampled RSP, like real frames) whose
 * first link is bad in one way, and spins with RBP pointing at them:
 *   self (points at itself), cycle (two frames pointing at each other), down (below itself),
 *   kernel (into the kernel half), noncanon (non-canonical), misaligned, mmio (a page mapped to
 *   the IOAPIC's MMIO), gap (a page in the MMIO hole where nothing is), pastram (a page mapped
 *   past the end of RAM), unmapped (nothing mapped), rsvd (a PTE with a reserved bit set).
 * The pages sit right above the main stack (GUEST_HOSTILE_HIGH_BASE), within an unwinder's
 * stack window. `kind=N` runs one kind only (default -1: all in turn, 20 ms each).
 * Expected user-walk stops: 5 (not upward) for self/cycle/down, 4 (bad fp) for kernel/noncanon/
 * misaligned, 3 (unmapped) for mmio/gap/pastram/unmapped/rsvd. */
#include "hostile_common.h"

enum {
    K_SELF,
    K_CYCLE,
    K_DOWN,
    K_KERNEL,
    K_NONCANON,
    K_MISALIGNED,
    K_MMIO,
    K_GAP,
    K_PASTRAM,
    K_UNMAPPED,
    K_RSVD,
    NKINDS
};

#define HIGH          GUEST_HOSTILE_HIGH_BASE
#define PAGE_MMIO     (HIGH + 0x1000) /* -> 0xfec00000, the IOAPIC (MP spec default) */
#define PAGE_GAP      (HIGH + 0x2000) /* -> 0xd0000000, inside the 3..4 GiB MMIO hole */
#define PAGE_PASTRAM  (HIGH + 0x3000) /* -> 64 GiB, far past any test guest's RAM */
#define PAGE_RSVD     (HIGH + 0x4000) /* PTE bit 51 set */
#define PAGE_UNMAPPED (HIGH + 0x8000) /* never mapped */

NOINLINE void fp_target(void)
{
    KEEP(0);
}

NOINLINE void run_kind(int k, uint64_t until)
{
    struct frame fr[2];
    fr[0].ret = fr[1].ret = (uint64_t)fp_target + 1;
    fr[1].next = 0;
    static const uint64_t bad[NKINDS] = {
        [K_KERNEL] = 0xffffffff80100000ull, [K_NONCANON] = 0x0000800000001000ull,
        [K_MMIO] = PAGE_MMIO + 16,          [K_GAP] = PAGE_GAP + 16,
        [K_PASTRAM] = PAGE_PASTRAM + 16,    [K_UNMAPPED] = PAGE_UNMAPPED + 16,
        [K_RSVD] = PAGE_RSVD + 16,
    };
    switch (k) {
    case K_SELF:
        fr[0].next = (uint64_t)&fr[0];
        break;
    case K_CYCLE:
        fr[0].next = (uint64_t)&fr[1];
        fr[1].next = (uint64_t)&fr[0];
        break;
    case K_DOWN:
        fr[0].next = (uint64_t)&fr[0] - 256;
        break;
    case K_MISALIGNED:
        fr[0].next = (uint64_t)&fr[1] + 4;
        break;
    default:
        fr[0].next = bad[k];
    }
    spin_rbp(until, (uint64_t)&fr[0]);
    KEEP(fr[0].next);
}

int main(void)
{
    uint64_t end = deadline_us();
    long only = param("kind", -1);
    int map_err = 0;
    map_err += hostile(GUEST_HOSTILE_MAP, PAGE_MMIO, 0xfec00000, 0) != 0;
    map_err += hostile(GUEST_HOSTILE_MAP, PAGE_GAP, 0xd0000000, 0) != 0;
    map_err += hostile(GUEST_HOSTILE_MAP, PAGE_PASTRAM, 64ull << 30, 0) != 0;
    /* Refused only when MAXPHYADDR is 52 (bit 51 is an address bit): then it stays unmapped. */
    bool rsvd = hostile(GUEST_HOSTILE_PT_RSVD, PAGE_RSVD, 1, 0) == 0;
    /* The kernel must refuse what would damage it or other mappings. */
    int refused = (hostile(GUEST_HOSTILE_MAP, 0x400000, 0, GUEST_HOSTILE_MAP_FRESH) < 0) +
                  (hostile(GUEST_HOSTILE_MAP, PAGE_MMIO, 0, GUEST_HOSTILE_MAP_FRESH) < 0) +
                  (hostile(GUEST_HOSTILE_MAP, PAGE_GAP + 8, 0xd0000000, 0) < 0);
    uint64_t rounds = 0;
    int k = only >= 0 && only < NKINDS ? (int)only : 0;
    do {
        run_kind(k, tsc_after_us(20000));
        rounds++;
        if (only < 0)
            k = (k + 1) % NKINDS;
    } while (now_us() < end);
    int ok = map_err == 0 && refused == 3;
    printf("hostile_fp: pid=%ld kinds=%d rounds=%lu map_errors=%d rsvd=%d refused=%d ok=%d\n",
           getpid(), only >= 0 ? 1 : NKINDS, rounds, map_err, rsvd, refused, ok);
    return ok ? 0 : 1;
}
