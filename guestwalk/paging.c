#include "guestwalk/paging.h"

#include <string.h>

/* Paging-entry bits (SDM Vol. 3A §4.5, Tables 4-14 to 4-20). */
#define PTE_P  (1ull << 0)
#define PTE_RW (1ull << 1)
#define PTE_US (1ull << 2)
#define PTE_PS (1ull << 7)
#define PTE_XD (1ull << 63)

/* Bits reserved in large-page entries between the PAT bit (12) and the page address:
 * 1 GiB PDPTE bits 29:13, 2 MiB PDE bits 20:13 (SDM Vol. 3A Tables 4-16, 4-18). */
#define RSVD_1G (((1ull << 30) - 1) & ~((1ull << 13) - 1))
#define RSVD_2M (((1ull << 21) - 1) & ~((1ull << 13) - 1))

#define ADDR_BITS_MAX 52 /* architectural MAXPHYADDR limit (SDM Vol. 3A §4.1.4) */

static inline unsigned level_shift(unsigned level)
{
    return 12 + 9 * (level - 1);
}

static inline uint64_t read_entry(const void *p)
{
    uint64_t e;
    memcpy(&e, p, sizeof(e)); /* host mapping of a slot need not be 8-byte aligned */
    return e;
}

static enum pt_fault_reason not_long_mode(struct pt_mmu *mmu, const char *why)
{
    mmu->mode = PT_MODE_NONE;
    mmu->mode_error = PT_NOT_LONG_MODE;
    mmu->mode_why = why;
    return PT_NOT_LONG_MODE;
}

enum pt_fault_reason pt_mmu_init(struct pt_mmu *mmu, uint64_t cr0, uint64_t cr3, uint64_t cr4,
                                 uint64_t efer, uint64_t kernel_cr3, unsigned phys_bits)
{
    memset(mmu, 0, sizeof(*mmu));
    if (phys_bits < 32 || phys_bits > ADDR_BITS_MAX)
        phys_bits = ADDR_BITS_MAX;
    uint64_t phys_limit = (1ull << phys_bits) - 1;
    mmu->addr_mask = phys_limit & ~0xfffull;
    mmu->nxe = (efer & PT_EFER_NXE) != 0;
    mmu->rsvd_mask = (((1ull << ADDR_BITS_MAX) - 1) & ~phys_limit) | (mmu->nxe ? 0 : PTE_XD);
    mmu->root_kernel_alt = UINT64_MAX;

    /* IA-32e paging needs CR0.PG, CR4.PAE and EFER.LMA (SDM Vol. 3A §4.1.1, Table 4-1). */
    if (!(cr0 & PT_CR0_PG))
        return not_long_mode(mmu, "paging disabled (CR0.PG=0)");
    if (!(cr4 & PT_CR4_PAE))
        return not_long_mode(mmu, "32-bit paging (CR4.PAE=0)");
    if (!(efer & PT_EFER_LMA))
        return not_long_mode(mmu, "PAE paging outside long mode (EFER.LMA=0)");

    mmu->mode = (cr4 & PT_CR4_LA57) ? PT_MODE_5LEVEL : PT_MODE_4LEVEL;
    mmu->mode_error = PT_OK;
    mmu->mode_why = NULL;
    mmu->va_bits = mmu->mode == PT_MODE_5LEVEL ? 57 : 48;
    /* CR3[11:0] is the PCID with CR4.PCIDE, else PWT/PCD; bits above MAXPHYADDR are LAM
     * and the no-flush hint (SDM Vol. 3A §4.5.2, Table 4-12/4-13). Both are masked. */
    mmu->root_user = cr3 & mmu->addr_mask;
    if (kernel_cr3) {
        mmu->root_kernel = kernel_cr3 & mmu->addr_mask;
    } else {
        mmu->root_kernel = mmu->root_user;
        if (cr3 & PT_CR3_KPTI_BIT)
            mmu->root_kernel_alt = mmu->root_user & ~PT_CR3_KPTI_BIT;
    }
    return PT_OK;
}

static int fail(struct pt_fault *f, enum pt_fault_reason r, unsigned level, unsigned index,
                uint64_t entry, uint64_t gpa)
{
    f->reason = r;
    f->level = (uint8_t)level;
    f->index = (uint16_t)index;
    f->entry = entry;
    f->gpa = gpa;
    return -1;
}

/* Reserved-bit check of a present entry at `level` (SDM Vol. 3A §4.5.4: a set reserved bit
 * raises #PF with RSVD=1 even if lower levels are fine). */
static bool entry_reserved(const struct pt_mmu *mmu, uint64_t e, unsigned level)
{
    if (e & mmu->rsvd_mask)
        return true;
    if (level >= 4 && (e & PTE_PS)) /* PS is reserved in PML5E/PML4E */
        return true;
    if (level == 3 && (e & PTE_PS) && (e & RSVD_1G))
        return true;
    if (level == 2 && (e & PTE_PS) && (e & RSVD_2M))
        return true;
    return false;
}

int pt_translate_root(const struct pt_mmu *mmu, const struct gmem *mem, uint64_t root, uint64_t va,
                      unsigned access, struct pt_xlate *out, struct pt_fault *fault)
{
    struct pt_fault scratch;
    struct pt_fault *f = fault ? fault : &scratch;
    memset(f, 0, sizeof(*f));
    f->va = va;
    if (mmu->mode == PT_MODE_NONE)
        return fail(f, PT_NOT_LONG_MODE, 0, 0, 0, 0);
    if (!pt_canonical(mmu, va))
        return fail(f, PT_NON_CANONICAL, 0, 0, 0, 0);

    bool user = true, writable = true, nx = false;
    uint64_t table = root;
    for (unsigned level = mmu->mode == PT_MODE_5LEVEL ? 5 : 4; level >= 1; level--) {
        unsigned shift = level_shift(level);
        unsigned idx = (unsigned)(va >> shift) & 511;
        const void *slot = gmem_ptr(mem, table + idx * 8ull, 8);
        if (!slot)
            return fail(f, PT_TABLE_OUTSIDE_RAM, level, idx, 0, table);
        uint64_t e = read_entry(slot);
        if (!(e & PTE_P))
            return fail(f, PT_NOT_PRESENT, level, idx, e, table);
        if (entry_reserved(mmu, e, level))
            return fail(f, PT_RESERVED_BIT, level, idx, e, table);
        user = user && (e & PTE_US);
        writable = writable && (e & PTE_RW);
        nx = nx || (mmu->nxe && (e & PTE_XD));
        if ((access & PT_ACC_USER) && !(e & PTE_US))
            return fail(f, PT_USER_VIOLATION, level, idx, e, table);
        if (level == 1 || (level <= 3 && (e & PTE_PS))) {
            uint64_t size = 1ull << shift;
            uint64_t gpa = (e & mmu->addr_mask & ~(size - 1)) | (va & (size - 1));
            if (!gmem_ptr(mem, gpa, 1))
                return fail(f, PT_PAGE_OUTSIDE_RAM, level, idx, e, gpa);
            if (out)
                *out = (struct pt_xlate){
                    .gpa = gpa, .page_size = size, .user = user, .writable = writable, .nx = nx};
            return 0;
        }
        table = e & mmu->addr_mask;
    }
    return fail(f, PT_NOT_PRESENT, 1, 0, 0, table); /* not reached: level 1 is always a leaf */
}

int pt_translate(const struct pt_mmu *mmu, const struct gmem *mem, uint64_t va, unsigned access,
                 struct pt_xlate *out, struct pt_fault *fault)
{
    if (!(va >> 63))
        return pt_translate_root(mmu, mem, mmu->root_user, va, access, out, fault);
    if (pt_translate_root(mmu, mem, mmu->root_kernel, va, access, out, fault) == 0)
        return 0;
    /* KPTI: the user PGD maps only the entry trampoline of the kernel half; its partner kernel
     * PGD is the 4 KiB page below (Linux PTI_USER_PGTABLE_BIT = 12). Where the user PGD does map
     * a kernel page, it is the same page, so trying it first loses nothing. */
    if (mmu->root_kernel_alt == UINT64_MAX)
        return -1;
    return pt_translate_root(mmu, mem, mmu->root_kernel_alt, va, access, out, fault);
}

/* Iteration state shared by the recursion (depth <= 5). */
struct iter {
    const struct pt_mmu *mmu;
    const struct gmem *mem;
    uint64_t lo, last; /* range, truncated to va_bits (so in index space) */
    unsigned budget;
    pt_mapping_cb cb;
    void *ctx;
    enum pt_iter_result result;
};

static uint64_t sign_extend(const struct pt_mmu *mmu, uint64_t va)
{
    unsigned top = mmu->va_bits - 1;
    return (va & (1ull << top)) ? va | ~((1ull << top) - 1) : va;
}

/* Visit table `table` at `level`, whose first entry maps index-space address `base`.
 * Returns false when the iteration must end (callback stop or budget exhausted). */
static bool visit(struct iter *it, unsigned level, uint64_t table, uint64_t base, bool user,
                  bool writable, bool nx)
{
    unsigned shift = level_shift(level);
    unsigned first = it->lo > base ? (unsigned)((it->lo - base) >> shift) : 0;
    uint64_t last_idx = (it->last - base) >> shift;
    unsigned last = last_idx > 511 ? 511 : (unsigned)last_idx;
    for (unsigned idx = first; idx <= last; idx++) {
        if (it->budget == 0) {
            it->result = PT_ITER_CAPPED;
            return false;
        }
        it->budget--;
        const void *slot = gmem_ptr(it->mem, table + idx * 8ull, 8);
        if (!slot)
            return true; /* table outside RAM: nothing to visit here */
        uint64_t e = read_entry(slot);
        if (!(e & PTE_P) || entry_reserved(it->mmu, e, level))
            continue;
        uint64_t va = base + ((uint64_t)idx << shift);
        bool u = user && (e & PTE_US), w = writable && (e & PTE_RW);
        bool x = nx || (it->mmu->nxe && (e & PTE_XD));
        if (level == 1 || (level <= 3 && (e & PTE_PS))) {
            uint64_t size = 1ull << shift;
            struct pt_mapping m = {
                .va = sign_extend(it->mmu, va),
                .gpa = e & it->mmu->addr_mask & ~(size - 1),
                .page_size = size,
                .user = u,
                .writable = w,
                .nx = x,
            };
            m.in_ram = gmem_ptr(it->mem, m.gpa, size) != NULL;
            if (it->cb(it->ctx, &m)) {
                it->result = PT_ITER_STOPPED;
                return false;
            }
            continue;
        }
        if (!visit(it, level - 1, e & it->mmu->addr_mask, va, u, w, x))
            return false;
    }
    return true;
}

enum pt_iter_result pt_for_each_mapping(const struct pt_mmu *mmu, const struct gmem *mem,
                                        uint64_t va_lo, uint64_t va_last, unsigned max_entries,
                                        pt_mapping_cb cb, void *ctx)
{
    if (mmu->mode == PT_MODE_NONE || !pt_canonical(mmu, va_lo) || !pt_canonical(mmu, va_last) ||
        (va_lo >> 63) != (va_last >> 63) || va_lo > va_last)
        return PT_ITER_BAD_MODE;
    uint64_t index_mask = (1ull << mmu->va_bits) - 1;
    struct iter it = {
        .mmu = mmu,
        .mem = mem,
        .lo = va_lo & index_mask,
        .last = va_last & index_mask,
        .budget = max_entries,
        .cb = cb,
        .ctx = ctx,
        .result = PT_ITER_DONE,
    };
    uint64_t root = (va_lo >> 63) ? mmu->root_kernel : mmu->root_user;
    visit(&it, mmu->mode == PT_MODE_5LEVEL ? 5 : 4, root, 0, true, true, false);
    return it.result;
}

const char *pt_fault_reason_str(enum pt_fault_reason r)
{
    switch (r) {
    case PT_OK:
        return "ok";
    case PT_NOT_LONG_MODE:
        return "guest not in long mode";
    case PT_NON_CANONICAL:
        return "non-canonical address";
    case PT_NOT_PRESENT:
        return "entry not present";
    case PT_RESERVED_BIT:
        return "reserved bit set in entry";
    case PT_USER_VIOLATION:
        return "supervisor page in a user-mode access";
    case PT_TABLE_OUTSIDE_RAM:
        return "page table outside guest RAM";
    case PT_PAGE_OUTSIDE_RAM:
        return "page outside guest RAM (MMIO hole or past end)";
    }
    return "unknown";
}
