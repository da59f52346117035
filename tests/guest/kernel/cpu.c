/* Per-CPU descriptor tables (SDM Vol. 3A 3.4.5 segment descriptors, 7.2.3 64-bit TSS
 * descriptor, 6.14.1 64-bit IDT gates). One IDT is shared; each CPU has its own GDT and TSS
 * (LTR marks the TSS busy, so it cannot be shared). */
#include "kernel.h"

#include "guest_abi.h"

struct idt_gate {
    u16 off_lo, sel;
    u8 ist, type_attr;
    u16 off_mid;
    u32 off_hi, zero;
} __attribute__((packed));

struct dtr {
    u16 limit;
    u64 base;
} __attribute__((packed));

static struct idt_gate idt[256];
extern const u64 trap_stubs[34];
bool cpu_has_fsgsbase;

static void idt_set(int vec, u64 handler, int dpl)
{
    struct idt_gate *g = &idt[vec];
    g->off_lo = (u16)handler;
    g->sel = SEL_KCODE;
    g->ist = 0;
    g->type_attr = (u8)(0x80 | (dpl << 5) | 0xe); /* present, 64-bit interrupt gate: IF=0 */
    g->off_mid = (u16)(handler >> 16);
    g->off_hi = (u32)(handler >> 32);
    g->zero = 0;
}

static void idt_build(void)
{
    for (int v = 0; v < 32; v++)
        idt_set(v, trap_stubs[v], v == VEC_BREAKPOINT ? 3 : 0);
    idt_set(VEC_TIMER, trap_stubs[32], 0);
    idt_set(VEC_SPURIOUS, trap_stubs[33], 0);
}

void cpu_init_tables(struct cpu *c)
{
    if (c->index == 0)
        idt_build();

    c->gdt[0] = 0;
    c->gdt[1] = 0x00af9a000000ffffull; /* 0x08 kernel code, L=1 */
    c->gdt[2] = 0x00cf92000000ffffull; /* 0x10 kernel data */
    c->gdt[3] = 0x00cff2000000ffffull; /* 0x18 user data, DPL 3 */
    c->gdt[4] = 0x00affa000000ffffull; /* 0x20 user code, DPL 3, L=1 */
    u64 tss = (u64)&c->tss;
    u64 lim = sizeof(c->tss) - 1;
    c->gdt[5] =
        (lim & 0xffff) | ((tss & 0xffffff) << 16) | (0x89ull << 40) | ((tss >> 24 & 0xff) << 56);
    c->gdt[6] = tss >> 32;
    memset(&c->tss, 0, sizeof(c->tss));
    /* Every entry from CPL 3 starts at the top of this CPU's kernel stack. */
    c->tss.rsp0 = (u64)c + CPU_AREA_SIZE;
    c->tss.iomap_base = sizeof(c->tss); /* no I/O bitmap: user port I/O faults (#GP) */

    struct dtr gdtr = {sizeof(c->gdt) - 1, (u64)c->gdt};
    struct dtr idtr = {sizeof(idt) - 1, (u64)idt};
    __asm__ volatile("lgdt %0\n\t"
                     "mov %1, %%ds\n\t"
                     "mov %1, %%es\n\t"
                     "mov %1, %%ss\n\t"
                     "xor %%eax, %%eax\n\t"
                     "mov %%ax, %%fs\n\t"
                     "mov %%ax, %%gs\n\t"
                     "pushq %2\n\t"
                     "lea 1f(%%rip), %%rax\n\t"
                     "pushq %%rax\n\t"
                     "lretq\n"
                     "1:\n\t"
                     "lidt %3\n\t"
                     "ltr %w4"
                     :
                     : "m"(gdtr), "r"((u64)SEL_KDATA), "i"(SEL_KCODE), "m"(idtr), "r"(SEL_TSS)
                     : "rax", "memory");

    /* CR4.FSGSBASE (bit 16) when CPUID.(7,0):EBX[0] says so: user code may then change its FS
     * base itself, so the scheduler always saves FS base with rdmsr on switch-out. */
    u32 a, b, cc, d;
    cpuid(0, 0, &a, &b, &cc, &d);
    if (a >= 7) {
        cpuid(7, 0, &a, &b, &cc, &d);
        if (b & 1) {
            u64 cr4;
            __asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
            cr4 |= 1ull << 16;
            __asm__ volatile("mov %0, %%cr4" ::"r"(cr4));
            cpu_has_fsgsbase = true;
        }
    }
}
