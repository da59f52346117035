#include "vmm/boot/pagetable.h"

#include "vmm/boot/guest_write.h"
#include "vmm/boot/layout.h"

uint64_t pt_identity_entry(uint64_t table_gpa, unsigned index)
{
    if (index >= 512)
        return 0;
    if (table_gpa == HVPROF_LOW_PML4)
        return index == 0 ? BOOT_PDPT_GPA | PT_PRESENT | PT_WRITE : 0;
    if (table_gpa == BOOT_PDPT_GPA)
        return index < BOOT_PD_PAGES
                   ? (BOOT_PD_GPA + index * BOOT_PAGE_SIZE) | PT_PRESENT | PT_WRITE
                   : 0;
    if (table_gpa >= BOOT_PD_GPA && table_gpa < BOOT_PD_GPA + BOOT_PD_PAGES * BOOT_PAGE_SIZE &&
        table_gpa % BOOT_PAGE_SIZE == 0) {
        uint64_t pd = (table_gpa - BOOT_PD_GPA) / BOOT_PAGE_SIZE;
        return ((pd * 512 + index) << 21) | PT_PRESENT | PT_WRITE | PT_PS;
    }
    return 0;
}

int pt_identity_write(struct gmem *mem, struct hv_err *err)
{
    /* PML4 + PDPT + 4 PDs are contiguous: [0x1000, 0x7000). */
    const uint64_t first = HVPROF_LOW_PML4;
    const uint64_t pages = 2 + BOOT_PD_PAGES;
    uint64_t *pt = gmem_ptr(mem, first, pages * BOOT_PAGE_SIZE);
    if (!pt)
        return guest_zero(mem, first, pages * BOOT_PAGE_SIZE, "page tables", err);
    for (uint64_t p = 0; p < pages; p++)
        for (unsigned i = 0; i < 512; i++)
            pt[p * 512 + i] = pt_identity_entry(first + p * BOOT_PAGE_SIZE, i);
    return 0;
}
