/* Physical memory: a bump allocator over the largest free RAM range (from the e820 map, minus
 * the kernel image and the boot archive, below 3 GiB so the direct map covers it), and two pools
 * of 4 KiB pages given back by processes that ended (docs/test-guest.md, "Processes that come
 * and go"): clean pages (page tables whose entries were cleared one by one: zero again without
 * zeroing a whole page, which costs ~0.3 ms of emulated CPL 0 here) and used pages (a program's
 * data and stacks: a new program's crt0 zeroes its own .bss at native speed, and its stack's old
 * bytes are below its stack pointer). Processes started at boot never give pages back. */
#include "kernel.h"

extern u8 kernel_end[];

static spinlock_t mem_lock;
static u64 next, limit;
static u64 clean_head, used_head; /* free lists: the next page's address in each page's word 0 */
static u64 clean_pages, used_pages;

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

static u64 pop(u64 *head, u64 *count)
{
    u64 pa = *head;
    if (pa) {
        u64 *w = phys_to_virt(pa);
        *head = w[0];
        w[0] = 0;
        (*count)--;
    }
    return pa;
}

u64 page_alloc(bool clean)
{
    spin_lock(&mem_lock);
    u64 pa = clean ? 0 : pop(&used_head, &used_pages);
    if (!pa)
        pa = pop(&clean_head, &clean_pages);
    spin_unlock(&mem_lock);
    return pa ? pa : phys_alloc(4096);
}

void page_free(u64 pa, bool clean)
{
    spin_lock(&mem_lock);
    u64 *w = phys_to_virt(pa);
    w[0] = clean ? clean_head : used_head;
    if (clean) {
        clean_head = pa;
        clean_pages++;
    } else {
        used_head = pa;
        used_pages++;
    }
    spin_unlock(&mem_lock);
}

u64 mem_free_bytes(void)
{
    return limit - next + (clean_pages + used_pages) * 4096;
}
