#include "guestos/linux/kread.h"

#include <stdio.h>
#include <string.h>

#include "guestos/linux/kernel.h"

int lx_kread_init(struct lx_kread *r, const struct gmem *mem, uint64_t root, bool la57, char *why,
                  size_t why_len)
{
    memset(r, 0, sizeof(*r));
    r->mem = mem;
    r->cached_page = UINT64_MAX;
    uint64_t cr4 = PT_CR4_PAE | (la57 ? PT_CR4_LA57 : 0);
    if (pt_mmu_init(&r->mmu, PT_CR0_PE | PT_CR0_PG, root, cr4,
                    PT_EFER_LME | PT_EFER_LMA | PT_EFER_NXE, root, 0) != PT_OK) {
        snprintf(why, why_len, "kernel page tables: %s", r->mmu.mode_why ? r->mmu.mode_why : "?");
        return -1;
    }
    return 0;
}

int lx_kread_init_kernel(struct lx_kread *r, const struct lx_kernel *k, const struct gmem *mem,
                         char *why, size_t why_len)
{
    uint64_t pgt;
    int64_t l5 = 0;
    if (!lx_vmcoreinfo_symbol(&k->vmci, "init_top_pgt", &pgt) || pgt < LX_START_KERNEL_MAP) {
        snprintf(why, why_len, "VMCOREINFO has no SYMBOL(init_top_pgt) in the kernel image");
        return -1;
    }
    (void)lx_vmcoreinfo_decimal(&k->vmci, "NUMBER(pgtable_l5_enabled)", &l5);
    uint64_t root = pgt - LX_START_KERNEL_MAP + k->img.phys_base;
    return lx_kread_init(r, mem, root, l5 == 1, why, why_len);
}

bool lx_kread(struct lx_kread *r, uint64_t va, void *dst, size_t len)
{
    uint8_t *d = dst;
    while (len) {
        uint64_t page = va & ~0xfffull;
        size_t n = 0x1000 - (va & 0xfff);
        if (n > len)
            n = len;
        if (page != r->cached_page) {
            struct pt_xlate x;
            struct pt_fault f;
            if (va < (1ull << 63) ||
                pt_translate(&r->mmu, r->mem, va, PT_ACC_SUPERVISOR, &x, &f) < 0)
                return false;
            const uint8_t *h = gmem_ptr(r->mem, x.gpa & ~0xfffull, 0x1000);
            if (!h)
                return false;
            r->cached_page = page;
            r->cached_host = h;
        }
        memcpy(d, r->cached_host + (va & 0xfff), n);
        d += n;
        va += n;
        len -= n;
    }
    return true;
}
