#include "vmm/boot/gdt.h"

#include "vmm/boot/guest_write.h"

uint64_t gdt_entry(uint16_t flags, uint32_t base, uint32_t limit)
{
    /* SDM Vol. 3A Figure 3-8: limit 15:0 | base 23:0 | access | limit 19:16 | flags | base 31:24 */
    return ((uint64_t)(base & 0xff000000u) << 32) | ((uint64_t)(flags & 0xf0ffu) << 40) |
           ((uint64_t)(limit & 0x000f0000u) << 32) | ((uint64_t)(base & 0x00ffffffu) << 16) |
           (uint64_t)(limit & 0x0000ffffu);
}

struct kvm_segment gdt_to_kvm_segment(uint64_t desc, uint16_t selector)
{
    uint32_t limit = (uint32_t)((desc & 0xffff) | ((desc >> 32) & 0xf0000));
    struct kvm_segment s = {
        .base = ((desc >> 16) & 0xffffff) | ((desc >> 32) & 0xff000000),
        .selector = selector,
        .type = (desc >> 40) & 0xf,
        .s = (desc >> 44) & 1,
        .dpl = (desc >> 45) & 3,
        .present = (desc >> 47) & 1,
        .avl = (desc >> 52) & 1,
        .l = (desc >> 53) & 1,
        .db = (desc >> 54) & 1,
        .g = (desc >> 55) & 1,
    };
    s.limit = s.g ? (limit << 12) | 0xfff : limit;
    s.unusable = !s.present;
    return s;
}

void gdt_boot_table(uint64_t out[BOOT_GDT_QWORDS])
{
    out[0] = 0;
    out[1] = 0;
    out[BOOT_SEL_CODE / 8] = gdt_entry(GDT_FLAGS_CODE64, 0, 0xfffff);
    out[BOOT_SEL_DATA / 8] = gdt_entry(GDT_FLAGS_DATA, 0, 0xfffff);
    /* 16-byte system descriptor: the second quadword holds base 63:32 (0). The TSS itself is never
     * used by the boot code (no privilege change, no IST); KVM only needs a valid, busy TR. */
    out[BOOT_SEL_TSS / 8] = gdt_entry(GDT_FLAGS_TSS64, 0, BOOT_TSS_LIMIT);
    out[BOOT_SEL_TSS / 8 + 1] = 0;
}

int gdt_write(struct gmem *mem, struct hv_err *err)
{
    uint64_t gdt[BOOT_GDT_QWORDS];
    gdt_boot_table(gdt);
    return guest_write(mem, HVPROF_LOW_GDT, gdt, sizeof(gdt), "GDT", err);
}
