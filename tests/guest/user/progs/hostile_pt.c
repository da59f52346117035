/* hostile_pt: page tables that point at themselves or set reserved bits. The program pivots its
 * stack into the low hostile region R (GUEST_HOSTILE_VA_BASE + 4 TiB, PML4 slot 200) laid out as
 *   R + 2M - 256K .. R + 2M - 192K   a fresh 64 KiB stack (the pivot's top at R + 2M - 192K)
 *   R + 2M - 188K                    a page whose PTE has reserved bit 51 set
 *   R + 2M .. R + 4M                 a PDE pointing at its own page directory: page i of this
 *                                    range is whatever PDE i points to (page 0 = the stack's
 *                                    page table, page 1 = the page directory itself)
 * and adds a PML4 entry pointing at the PML4 (slot 201) and a PML4 entry with the reserved PS
 * bit (slot 202), which only a page-table iterator (module discovery) meets. On the pivoted
 * stack, rounds of 20 ms spin with a frame whose link points into the reserved page, into the
 * self-mapped page tables (read as frame records), or back to the real stack (beyond any
 * unwinder's window), while `pt_work` frames sit on the pivoted stack. */
#include "hostile_common.h"

#define R          (GUEST_HOSTILE_VA_BASE + (8ull << 39)) /* PML4 slot 200 */
#define STACK_LO   (R + 0x200000 - 0x40000)
#define STACK_TOP  (R + 0x200000 - 0x30000)
#define PAGE_RSVD  (STACK_TOP + 0x1000)
#define SELF_PD    (R + 0x200000)
#define SELF_PML4  (GUEST_HOSTILE_VA_BASE + (9ull << 39))  /* slot 201 */
#define RSVD_PML4E (GUEST_HOSTILE_VA_BASE + (10ull << 39)) /* slot 202 */

enum { K_RSVD, K_SELF_PT, K_SELF_PD, K_BACK, NKINDS };

struct pt_run {
    uint64_t end_us, rounds;
    long only;
    uint64_t real_rbp;
};

NOINLINE void pt_spin(int k, const struct pt_run *run)
{
    struct frame fr = {0, 0};
    static const uint64_t bad[NKINDS] = {
        [K_RSVD] = PAGE_RSVD + 16, [K_SELF_PT] = SELF_PD + 8, [K_SELF_PD] = SELF_PD + 0x1000 + 8};
    fr.ret = (uint64_t)pt_spin + 1;
    fr.next = k == K_BACK ? run->real_rbp : bad[k];
    spin_rbp(tsc_after_us(20000), (uint64_t)&fr);
    KEEP(fr.next);
}

NOINLINE void pt_work(void *arg)
{
    struct pt_run *run = arg;
    int k = run->only >= 0 && run->only < NKINDS ? (int)run->only : 0;
    do {
        pt_spin(k, run);
        run->rounds++;
        if (run->only < 0)
            k = (k + 1) % NKINDS;
    } while (now_us() < run->end_us);
}

int main(void)
{
    struct pt_run run = {deadline_us(), 0, param("kind", -1), (uint64_t)__builtin_frame_address(0)};
    int err = 0;
    for (uint64_t va = STACK_LO; va < STACK_TOP; va += 0x1000)
        err += hostile(GUEST_HOSTILE_MAP, (long)va, 0, GUEST_HOSTILE_MAP_FRESH) != 0;
    bool rsvd = hostile(GUEST_HOSTILE_PT_RSVD, PAGE_RSVD, 1, 0) == 0;
    err += hostile(GUEST_HOSTILE_PT_SELF, SELF_PD, 2, 0) != 0;
    err += hostile(GUEST_HOSTILE_PT_SELF, SELF_PML4, 4, 0) != 0;
    err += hostile(GUEST_HOSTILE_PT_RSVD, RSVD_PML4E, 0, 0) != 0;
    /* Mapping under a self-reference or a poisoned entry must be refused. */
    int refused = (hostile(GUEST_HOSTILE_MAP, SELF_PD + 0x3000, 0, GUEST_HOSTILE_MAP_FRESH) < 0) +
                  (hostile(GUEST_HOSTILE_MAP, SELF_PML4 + 0x1000, 0, GUEST_HOSTILE_MAP_FRESH) < 0) +
                  (hostile(GUEST_HOSTILE_MAP, RSVD_PML4E + 0x1000, 0, GUEST_HOSTILE_MAP_FRESH) < 0);
    /* The self-mapped PD really is readable: its page 1 is the PD, whose entry 1 points at
     * itself (the PD's physical address, present + user). */
    uint64_t pde1 = *(volatile uint64_t *)(SELF_PD + 0x1000 + 8);
    if (!err)
        call_on_stack(pt_work, &run, STACK_TOP);
    int ok = err == 0 && refused == 3 && (pde1 & 5) == 5 && run.rounds > 0;
    printf("hostile_pt: pid=%ld rounds=%lu errors=%d rsvd=%d refused=%d pde_self=%d ok=%d\n",
           getpid(), run.rounds, err, rsvd, refused, (pde1 & 5) == 5, ok);
    return ok ? 0 : 1;
}
