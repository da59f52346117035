/* GUEST_SYS_HOSTILE: debug operations for the hostile programs (guest_abi.h, docs/test-guest.md
 * "Hostile programs"). Each one damages only the calling process's own address space (inside
 * the reserved region GUEST_HOSTILE_VA_BASE..END, which no normal mapping uses) or stops the
 * machine on request, so every other program keeps running correctly. Bad arguments get
 * GUEST_EINVAL, never a kernel fault. */
#include "kernel.h"

#include "guest_abi.h"

#define PTE_BIT51    (1ull << 51)
#define MAX_SPIN_US  10000000ull /* 10 s */
#define MAX_PIO      1000000ull
#define PORT_POST    0x80 /* the POST diagnostic port: the VMM answers it, nothing listens */
#define RFLAGS_IOPL3 (3ull << 12) /* SDM Vol. 1 3.4.3.3: IOPL in RFLAGS[13:12] */

/* Spin at CPL 0 until the TSC reaches `until`, with RBP = `rbp` meanwhile: a profiler's kernel
 * frame-pointer walk then starts from a frame pointer the user chose (user address,
 * non-canonical, MMIO through the direct map). Two values build the frame on this kernel stack:
 * GUEST_HOSTILE_KFP_LOOP (its saved RBP points at itself) and GUEST_HOSTILE_KFP_DOWN (it points
 * 64 bytes below itself). Assembly, so no compiler-made frame relies on RBP during the spin. */
u64 hostile_spin_rbp(u64 until, u64 rbp);
__asm__(".text\n"
        ".globl hostile_spin_rbp\n"
        ".type hostile_spin_rbp, @function\n"
        "hostile_spin_rbp:\n"
        "    push %rbp\n"
        "    sub $16, %rsp\n"
        "    lea hostile_spin_rbp(%rip), %rax\n"
        "    mov %rax, 8(%rsp)\n" /* the fake frame's return address: some kernel text */
        "    lea -64(%rsp), %rax\n"
        "    cmp $" GUEST_HOSTILE_KFP_DOWN_STR ", %rsi\n"
        "    je 1f\n"
        "    mov %rsp, %rax\n"
        "    cmp $" GUEST_HOSTILE_KFP_LOOP_STR ", %rsi\n"
        "    jne 2f\n"
        "1:  mov %rax, (%rsp)\n"
        "    mov %rsp, %rsi\n"
        "2:  mov %rsi, %rbp\n"
        "3:  rdtsc\n"
        "    shl $32, %rdx\n"
        "    or %rdx, %rax\n"
        "    cmp %rdi, %rax\n"
        "    jb 3b\n"
        "    add $16, %rsp\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size hostile_spin_rbp, . - hostile_spin_rbp\n");

static u32 maxphyaddr(void)
{
    u32 a, b, c, d;
    cpuid(0x80000000, 0, &a, &b, &c, &d);
    if (a < 0x80000008)
        return 36; /* SDM Vol. 3A 4.1.4: 36 when the leaf is missing */
    cpuid(0x80000008, 0, &a, &b, &c, &d);
    return a & 0xff;
}

static void flush_tlb(void)
{
    write_cr3(read_cr3());
}

static bool in_region(u64 va, u64 len)
{
    if (va >= GUEST_HOSTILE_VA_BASE && va < GUEST_HOSTILE_VA_END)
        return len <= GUEST_HOSTILE_VA_END - va;
    return va >= GUEST_HOSTILE_HIGH_BASE && va < GUEST_HOSTILE_HIGH_END &&
           len <= GUEST_HOSTILE_HIGH_END - va;
}

/* An entry a walk may descend through as an ordinary table: not a large page, not poisoned by
 * PT_RSVD, not a PT_SELF self-reference (`table` is the physical address holding it). */
static bool plain_table(u64 e, u64 table)
{
    return !(e & PTE_PS) && !(e & PTE_BIT51) && (e & PTE_ADDR) != table;
}

/* Nothing is mapped at va yet (4 KiB page, or the whole 2 MiB range for `huge`), and the tables
 * on the way are ordinary, so vm_map may build on them. */
static bool va_free(u64 pml4, u64 va, bool huge)
{
    u64 table = pml4;
    for (int level = 3; level >= 0; level--) {
        u64 e = ((const u64 *)phys_to_virt(table))[va >> (12 + 9 * level) & 511];
        if (!(e & PTE_P))
            return true;
        if (level == 0 || (huge && level == 1) || !plain_table(e, table))
            return false;
        table = e & PTE_ADDR;
    }
    return false;
}

static long hostile_map(struct thread *t, u64 va, u64 pa, u64 flags)
{
    u64 pml4 = t->proc->cr3;
    bool fresh = flags & GUEST_HOSTILE_MAP_FRESH, huge = flags & GUEST_HOSTILE_MAP_HUGE;
    u64 size = huge ? 0x200000 : 0x1000;
    if ((huge && !fresh) || (va & (size - 1)) || !in_region(va, size) || !va_free(pml4, va, huge))
        return GUEST_EINVAL;
    if (!fresh && ((pa & 0xfff) || pa >= (1ull << maxphyaddr())))
        return GUEST_EINVAL;
    if (fresh)
        pa = phys_alloc(size);
    vm_map(pml4, va, pa, PTE_W | PTE_U, huge);
    flush_tlb();
    return 0;
}

/* The entry at `level` (4 = PML4E, 3 = PDPTE, 2 = PDE) that maps va, creating the tables above
 * it; NULL when a large page, a self-reference or a poisoned entry is in the way. */
static u64 *entry_at(u64 pml4, u64 va, int level)
{
    u64 *t = phys_to_virt(pml4);
    for (int l = 4; l > level; l--) {
        u64 *e = &t[va >> (12 + 9 * (l - 1)) & 511];
        if (!(*e & PTE_P))
            *e = phys_alloc(4096) | PTE_P | PTE_W | PTE_U;
        else if (!plain_table(*e, (u64)t - DMAP_BASE))
            return NULL;
        t = phys_to_virt(*e & PTE_ADDR);
    }
    return &t[va >> (12 + 9 * (level - 1)) & 511];
}

static long hostile_pt_self(struct thread *t, u64 va, u64 level)
{
    u64 pml4 = t->proc->cr3;
    if ((level != 4 && level != 2) || (level == 2 && (va & 0x1fffff)) || !in_region(va, 1))
        return GUEST_EINVAL;
    u64 *e = entry_at(pml4, va, (int)level);
    if (!e || (*e & PTE_P))
        return GUEST_EINVAL;
    /* Read-only: the process may look at its page tables through this range, never change them. */
    *e = ((u64)e & ~0xfffull) - DMAP_BASE;
    *e |= PTE_P | PTE_U;
    flush_tlb();
    return 0;
}

static long hostile_pt_rsvd(struct thread *t, u64 va, u64 kind)
{
    u64 pml4 = t->proc->cr3;
    if ((va & 0xfff) || !in_region(va, 0x1000) || kind > 1)
        return GUEST_EINVAL;
    if (kind == 1 && maxphyaddr() >= 52)
        return GUEST_EINVAL; /* bit 51 is an address bit then */
    u64 *slot = (u64 *)phys_to_virt(pml4) + (va >> 39 & 511);
    /* kind 0 poisons the whole PML4 slot, so it must be one nothing else uses. */
    if ((kind == 0 && (*slot & PTE_P)) || !va_free(pml4, va, false))
        return GUEST_EINVAL;
    vm_map(pml4, va, phys_alloc(0x1000), PTE_W | PTE_U, false);
    if (kind == 0)
        *slot |= PTE_PS; /* SDM Vol. 3A table 4-15: PML4E bit 7 is reserved (must be 0) */
    else
        *vm_pte(pml4, va) |= PTE_BIT51;
    flush_tlb();
    return 0;
}

static long hostile_kspin(u64 us, u64 rbp)
{
    if (us > MAX_SPIN_US)
        return GUEST_EINVAL;
    u64 until = rdtsc() + us * (tsc_hz / 1000000);
    if (rbp)
        hostile_spin_rbp(until, rbp);
    else
        kbusy_level1(until); /* the known kernel chain of GUEST_SYS_KBUSY, for longer */
    return 0;
}

static _Noreturn void hostile_triple(void)
{
    static const struct {
        u16 limit;
        u64 base;
    } __attribute__((packed)) empty = {0, 0};
    /* With no IDT, #UD cannot be delivered (#GP), nor can that (#DF), nor that: shutdown. */
    __asm__ volatile("lidt %0\n\tud2" ::"m"(empty));
    panic("hostile: the CPU survived a fault with an empty IDT");
}

long sys_hostile(struct thread *t, struct trapframe *tf)
{
    switch (tf->rdi) {
    case GUEST_HOSTILE_MAP:
        return hostile_map(t, tf->rsi, tf->rdx, tf->r10);
    case GUEST_HOSTILE_PT_SELF:
        return hostile_pt_self(t, tf->rsi, tf->rdx);
    case GUEST_HOSTILE_PT_RSVD:
        return hostile_pt_rsvd(t, tf->rsi, tf->rdx);
    case GUEST_HOSTILE_KSPIN:
        return hostile_kspin(tf->rsi, tf->rdx);
    case GUEST_HOSTILE_PIO:
        if (tf->rsi > MAX_PIO)
            return GUEST_EINVAL;
        for (u64 i = 0; i < tf->rsi; i++)
            outb(PORT_POST, (u8)i);
        return 0;
    case GUEST_HOSTILE_IOPL:
        tf->rflags |= RFLAGS_IOPL3;
        return 0;
    case GUEST_HOSTILE_TRIPLE:
        hostile_triple();
    case GUEST_HOSTILE_MAXPHYS:
        return maxphyaddr();
    default:
        return GUEST_EINVAL;
    }
}
