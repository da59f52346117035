#include "guestos/generic/generic.h"

#include "guestos/generic/user_modules.h"
#include "guestwalk/paging.h"

#include <stdlib.h>

/* One address space per process, whichever half of a PTI pair CR3 holds now; the kernel half
 * of a pair is then what kernel-stack reads go through. */
void guestos_generic_identify(const struct guestos *os, struct guestos_vcpu *vc,
                              const struct gmem *mem, struct gw_snapshot *snap,
                              struct guestos_ident *out)
{
    (void)os;
    uint64_t cr3 = snap->cr3 & GUESTOS_CR3_ADDR_MASK;
    uint64_t root = pti_canonical_root(&vc->pti, mem, cr3, GUESTOS_CR3_ADDR_MASK);
    if (root != cr3 && !snap->kernel_cr3)
        snap->kernel_cr3 = root;
    out->as_root = root;
    out->thread_key = snap->fs_base;
}

/* The user half of an address space: a PTI process's kernel PGD (the canonical root) marks
 * every user entry NX, so it is read through the user PGD, 4 KiB above. false: not long mode. */
bool guestos_generic_user_mmu(const struct gmem *mem, const struct guestos_as *as,
                              struct pt_mmu *mmu)
{
    uint64_t root = as->root;
    if (pti_is_user_root(mem, root | PTI_USER_BIT, GUESTOS_CR3_ADDR_MASK))
        root |= PTI_USER_BIT;
    return pt_mmu_init(mmu, as->cr0, root, as->cr4, as->efer, 0, 0) == PT_OK;
}

size_t guestos_generic_discover_modules(struct guestos *os, const struct gmem *mem,
                                        const struct guestos_as *as, struct discover_module *out,
                                        size_t max)
{
    (void)os;
    struct discover_range *r = malloc(DISCOVER_GUEST_MAX_RANGES * sizeof(*r));
    size_t nr, n = r ? guestos_generic_discover_in(mem, as, r, &nr, out, max) : 0;
    free(r);
    return n;
}

size_t guestos_generic_discover_in(const struct gmem *mem, const struct guestos_as *as,
                                   struct discover_range *ranges, size_t *nranges,
                                   struct discover_module *out, size_t max)
{
    struct pt_mmu mmu;
    *nranges = 0;
    if (!guestos_generic_user_mmu(mem, as, &mmu))
        return 0; /* not long mode: nothing to discover */
    *nranges = discover_guest_ranges(mem, &mmu, ranges, NULL);
    return discover_guest_modules_in(mem, &mmu, ranges, *nranges, out, max);
}

bool guestos_generic_read_user(const struct gmem *mem, const struct guestos_as *as, uint64_t va,
                               void *dst, size_t len)
{
    struct pt_mmu mmu;
    return guestos_generic_user_mmu(mem, as, &mmu) && discover_guest_read(mem, &mmu, va, dst, len);
}

bool guestos_generic_user_gpa(const struct gmem *mem, const struct guestos_as *as, uint64_t va,
                              uint64_t *gpa)
{
    struct pt_mmu mmu;
    struct pt_xlate x;
    if (!guestos_generic_user_mmu(mem, as, &mmu) ||
        pt_translate(&mmu, mem, va, PT_ACC_USER, &x, NULL) != 0)
        return false;
    *gpa = x.gpa;
    return true;
}

bool guestos_generic_shared_page(const struct gmem *mem, const struct guestos_as *a,
                                 const struct guestos_as *b, uint64_t va)
{
    struct pt_mmu ma, mb;
    struct pt_xlate xa, xb;
    return guestos_generic_user_mmu(mem, a, &ma) && guestos_generic_user_mmu(mem, b, &mb) &&
           pt_translate(&ma, mem, va, PT_ACC_USER, &xa, NULL) == 0 &&
           pt_translate(&mb, mem, va, PT_ACC_USER, &xb, NULL) == 0 && xa.gpa == xb.gpa;
}

long guestos_generic_module_symbols(const struct guestos *os, const struct gmem *mem,
                                    const struct guestos_as *as, const struct discover_module *m,
                                    guestos_symbol_fn fn, void *ctx)
{
    (void)os;
    struct pt_mmu mmu;
    if (!guestos_generic_user_mmu(mem, as, &mmu))
        return -1;
    return discover_guest_symbols(mem, &mmu, m, fn, ctx);
}

const struct guestos_ops guestos_generic_ops = {
    .name = "generic",
    .identify = guestos_generic_identify,
    .discover_modules = guestos_generic_discover_modules,
    .module_symbols = guestos_generic_module_symbols,
    .read_user = guestos_generic_read_user,
};
