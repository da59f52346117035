#include "vmm/boot/cpu_state.h"

#include <string.h>

#include "vmm/boot/gdt.h"
#include "vmm/boot/layout.h"

void boot_cpu_state(struct boot_entry *out, uint64_t rip, uint64_t params)
{
    uint64_t gdt[BOOT_GDT_QWORDS];
    gdt_boot_table(gdt);

    memset(&out->regs, 0, sizeof(out->regs));
    out->regs.rflags = 0x2; /* bit 1 is reserved-one; IF = 0: "interrupt must be disabled" */
    out->regs.rip = rip;
    out->regs.rsp = BOOT_STACK_TOP;
    out->regs.rsi = params;

    struct kvm_sregs *s = &out->sregs;
    memset(s, 0, sizeof(*s));
    s->cs = gdt_to_kvm_segment(gdt[BOOT_SEL_CODE / 8], BOOT_SEL_CODE);
    struct kvm_segment data = gdt_to_kvm_segment(gdt[BOOT_SEL_DATA / 8], BOOT_SEL_DATA);
    s->ds = s->es = s->fs = s->gs = s->ss = data;
    s->tr = gdt_to_kvm_segment(gdt[BOOT_SEL_TSS / 8], BOOT_SEL_TSS);
    /* No LDT; the same "usable, type 2" state KVM's reset gives it. */
    s->ldt = (struct kvm_segment){.limit = 0xffff, .type = 2, .present = 1};
    s->gdt.base = HVPROF_LOW_GDT;
    s->gdt.limit = sizeof(gdt) - 1;
    s->idt.base = 0;
    s->idt.limit = 0;
    s->cr0 = BOOT_CR0;
    s->cr3 = HVPROF_LOW_PML4;
    s->cr4 = BOOT_CR4;
    s->efer = BOOT_EFER;
    out->entry = rip;
}

void boot_apply_sregs(struct kvm_sregs *dst, const struct kvm_sregs *boot)
{
    uint64_t apic_base = dst->apic_base, cr2 = dst->cr2, cr8 = dst->cr8;
    __u64 bitmap[sizeof(dst->interrupt_bitmap) / sizeof(dst->interrupt_bitmap[0])];
    memcpy(bitmap, dst->interrupt_bitmap, sizeof(bitmap));
    *dst = *boot;
    dst->apic_base = apic_base;
    dst->cr2 = cr2;
    dst->cr8 = cr8;
    memcpy(dst->interrupt_bitmap, bitmap, sizeof(bitmap));
}
