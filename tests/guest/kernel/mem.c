/* Physical memory: a bump allocator over the largest free RAM range (from the e820 map, minus
 * the kernel image and the boot archive, below 3 GiB so the direct map covers it). Nothing is
 * ever freed: test runs are short and a process's pages stay readable after it exits, which is
 * what a profiler walking a just-exited process's stack would see anyway. */
#include "kernel.h"

extern u8 kernel_end[];

static spinlock_t mem_lock;
static u64 next, limit;

static void consider(u64 lo, u64 hi, u64 *best_lo, u64 *best_hi)
{
    if (hi > HVPROF_MMIO_GAP_START)
        hi = HVPROF_MMIO_GAP_START;
    if (lo < hi && hi - lo > *best_hi - *best_lo) {
        *best_lo = lo;
        *best_hi = hi;
    }
}

void mem_init(const struct hvprof_bootinfo *bi)
{
    u64 kend = kimage_to_phys(kernel_end);
    if (bi->kernel_end_gpa > kend)
        kend = bi->kernel_end_gpa;
    u64 ird_lo = bi->initrd_gpa, ird_hi = bi->initrd_gpa + bi->initrd_size;
    u64 best_lo = 0, best_hi = 0;
    u32 n = bi->e820_entries < HVPROF_E820_MAX ? bi->e820_entries : HVPROF_E820_MAX;
    for (u32 i = 0; i < n; i++) {
        const struct hvprof_e820 *e = &bi->e820[i];
        if (e->type != HVPROF_E820_RAM)
            continue;
        u64 lo = e->addr, hi = e->addr + e->size;
        if (lo < kend)
            lo = kend;
        if (bi->initrd_size && ird_lo < hi && ird_hi > lo) {
            consider(lo, ird_lo, &best_lo, &best_hi);
            consider(ird_hi, hi, &best_lo, &best_hi);
        } else {
            consider(lo, hi, &best_lo, &best_hi);
        }
    }
    if (!n) /* no map: assume RAM from the kernel's end to mem_bytes (minus the archive) */
        consider(kend > ird_hi ? kend : ird_hi, bi->mem_bytes, &best_lo, &best_hi);
    next = (best_lo + 0xfff) & ~0xfffull;
    limit = best_hi & ~0xfffull;
    if (limit <= next)
        panic("no free RAM (kernel end %#lx, archive %#lx+%#lx)", kend, ird_lo, bi->initrd_size);
}

u64 phys_alloc(u64 size)
{
    spin_lock(&mem_lock);
    u64 pa = (next + size - 1) & ~(size - 1);
    if (pa + size > limit || pa + size < pa) {
        spin_unlock(&mem_lock);
        panic("out of memory allocating %#lx bytes", size);
    }
    /* A 2 MiB allocation leaves the 4 KiB pages before it unused: fine for a short-lived test OS.
     */
    next = pa + size;
    spin_unlock(&mem_lock);
    /* Memory handed out here was never used since boot, and guest RAM starts zero-filled (the
     * VMM backs it with anonymous memory): zeroing it again at CPL 0 costs ~0.3 ms per 4 KiB page
     * (~170 ms per 2 MiB page) of emulated `rep stosq`. zeropages=1 forces it for other VMMs. */
    if (config.zero_pages) {
        u8 *p = phys_to_virt(pa);
        for (u64 off = 0; off < size; off += 4096)
            zero_page(p + off);
    }
    return pa;
}

u64 mem_free_bytes(void)
{
    return limit - next;
}
