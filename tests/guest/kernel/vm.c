/* User address spaces: a PML4 per process whose upper half (slots 256..511) is the kernel's and
 * whose lower half holds that process's 4 KiB and 2 MiB pages (SDM Vol. 3A 4.5). */
#include "kernel.h"

extern u64 kernel_pml4[];

u64 vm_new_pml4(void)
{
    u64 pa = phys_alloc(4096);
    u64 *p = phys_to_virt(pa);
    /* The kernel's only upper-half slots (entry.S): copying just these two instead of all 256
     * saves ~1 ms of emulated CPL 0 work per process. */
    p[256] = kernel_pml4[256];
    p[511] = kernel_pml4[511];
    return pa;
}

static u64 *next_table(u64 *table, int idx)
{
    if (!(table[idx] & PTE_P))
        table[idx] = page_alloc(true) | PTE_P | PTE_W | PTE_U;
    if (table[idx] & PTE_PS)
        panic("vm_map: address already mapped by a large page");
    return phys_to_virt(table[idx] & PTE_ADDR);
}

u64 *vm_pte(u64 pml4, u64 va)
{
    u64 *t = phys_to_virt(pml4);
    t = next_table(t, (int)(va >> 39 & 511));
    t = next_table(t, (int)(va >> 30 & 511));
    t = next_table(t, (int)(va >> 21 & 511));
    return &t[va >> 12 & 511];
}

void vm_map(u64 pml4, u64 va, u64 pa, u64 flags, bool huge)
{
    if (huge) {
        u64 *t = phys_to_virt(pml4);
        t = next_table(t, (int)(va >> 39 & 511));
        t = next_table(t, (int)(va >> 30 & 511));
        t[va >> 21 & 511] = pa | flags | PTE_P | PTE_PS;
        return;
    }
    *vm_pte(pml4, va) = pa | flags | PTE_P;
}

/* True when every byte of [va, va+len) is mapped present+user (and writable if asked) in this
 * address space: system calls check user pointers with this before touching them, so a bad
 * pointer gets an error instead of a kernel page fault. */
bool vm_user_range_ok(u64 pml4, u64 va, u64 len, bool write)
{
    if (len == 0)
        return true;
    if (va >= 0x800000000000ull || len > 0x800000000000ull - va)
        return false;
    u64 need = PTE_P | PTE_U | (write ? PTE_W : 0);
    for (u64 page = va & ~0xfffull; page < va + len;) {
        const u64 *t = phys_to_virt(pml4);
        u64 e = t[page >> 39 & 511];
        int level = 3;
        u64 size = 0;
        while ((e & need) == need) {
            /* Entries GUEST_HOSTILE_PT_RSVD poisoned would fault the kernel (#PF, RSVD). */
            if ((level == 3 && (e & PTE_PS)) || (e & (1ull << 51)))
                break;
            if (level == 0 || (level == 1 && (e & PTE_PS))) {
                size = level == 0 ? 0x1000 : 0x200000;
                break;
            }
            t = phys_to_virt(e & PTE_ADDR);
            level--;
            e = t[page >> (12 + 9 * level) & 511];
        }
        if (!size)
            return false;
        page = (page & ~(size - 1)) + size;
    }
    return true;
}

/* A user stack ending at `top`: USER_STACK_SIZE of 4 KiB pages, or one 2 MiB page. */
void vm_map_stack(u64 pml4, u64 top, bool huge)
{
    if (huge) {
        vm_map(pml4, top - 0x200000, phys_alloc(0x200000), PTE_W | PTE_U, true);
        return;
    }
    /* One page-table walk: the stack lies inside one page table. Its pages may be another
     * process's old ones: a stack's bytes are read only after they are written. */
    u64 *pte = vm_pte(pml4, top - USER_STACK_SIZE);
    for (u64 off = 0; off < USER_STACK_SIZE; off += 4096)
        *pte++ = page_alloc(false) | PTE_P | PTE_W | PTE_U;
}

/* The entry for va at `level` (3: PML4E ... 0: PTE), or NULL where a table above is absent. */
static u64 *entry_at(u64 pml4, u64 va, int level)
{
    u64 *t = phys_to_virt(pml4);
    for (int l = 3; l > level; l--) {
        u64 e = t[va >> (12 + 9 * l) & 511];
        if (!(e & PTE_P) || (e & PTE_PS))
            return NULL;
        t = phys_to_virt(e & PTE_ADDR);
    }
    return &t[va >> (12 + 9 * level) & 511];
}

void vm_unmap_range(u64 pml4, u64 lo, u64 hi)
{
    /* One walk to each page table, then its entries (each walk is emulated CPL 0 work). */
    for (u64 va = lo & ~0xfffull; va < hi;) {
        u64 region_end = (va | 0x1fffffull) + 1;
        u64 *pte = entry_at(pml4, va, 0);
        for (; va < hi && va < region_end; va += 4096, pte = pte ? pte + 1 : NULL) {
            if (!pte || !(*pte & PTE_P))
                continue;
            if (!(*pte & PTE_SHARED))
                page_free(*pte & PTE_ADDR, false);
            *pte = 0;
        }
        va = region_end;
    }
}

void vm_free_tables(u64 pml4, u64 lo, u64 hi)
{
    /* Bottom up: a table's entries were cleared before it goes (level 1 holds page tables). */
    for (int level = 1; level <= 3; level++) {
        u64 span = 1ull << (12 + 9 * level);
        for (u64 va = lo & ~(span - 1); va < hi; va += span) {
            u64 *e = entry_at(pml4, va, level);
            if (!e || !(*e & PTE_P) || (*e & PTE_PS))
                continue;
            page_free(*e & PTE_ADDR, true);
            *e = 0;
        }
    }
}
