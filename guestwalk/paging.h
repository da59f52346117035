/* x86-64 guest paging: derive the MMU mode from the vCPU's control registers, translate a guest
 * virtual address to a guest-physical one (and on to a host pointer through struct gmem only),
 * and iterate the present leaf mappings of a VA range.
 *
 * Everything here reads untrusted guest page tables: each walk touches at most one entry per
 * level (4 or 5), every table address is bounds-checked against the gmem slot table, and every
 * failure says where it stopped (struct pt_fault). No allocation, no locks, no system calls.
 *
 * Levels are numbered as in the SDM (Vol. 3A §4.5): 5 = PML5, 4 = PML4, 3 = PDPT, 2 = PD,
 * 1 = PT. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "guestwalk/gmem.h"

enum pt_mode {
    PT_MODE_NONE = 0, /* not in IA-32e (long) mode: nothing can be translated */
    PT_MODE_4LEVEL,   /* IA-32e paging, 48-bit virtual addresses */
    PT_MODE_5LEVEL,   /* IA-32e paging with CR4.LA57, 57-bit virtual addresses */
};

enum pt_fault_reason {
    PT_OK = 0,
    PT_NOT_LONG_MODE,     /* CR0.PG/CR4.PAE/EFER.LMA say the guest is not in long mode */
    PT_NON_CANONICAL,     /* VA is not canonical for the paging mode */
    PT_NOT_PRESENT,       /* entry P bit clear */
    PT_RESERVED_BIT,      /* a reserved bit is set in a present entry (SDM Vol. 3A §4.5.4) */
    PT_USER_VIOLATION,    /* user-mode access, but some level has U/S = 0 (supervisor page) */
    PT_TABLE_OUTSIDE_RAM, /* a paging-structure address is not in guest RAM (MMIO hole, past end) */
    PT_PAGE_OUTSIDE_RAM,  /* the final guest-physical address is not in guest RAM */
};

/* Where and why a translation stopped. `level` is the table whose entry failed (0 when the VA
 * itself was rejected), `index` the 9-bit entry index in that table, `entry` its raw value (0 if
 * the table could not be read), `gpa` the table's or page's guest-physical address. */
struct pt_fault {
    enum pt_fault_reason reason;
    uint8_t level;
    uint16_t index;
    uint64_t va;
    uint64_t entry;
    uint64_t gpa;
};

/* Access kind for pt_translate: a user-mode access also requires U/S = 1 at every level (SDM
 * Vol. 3A §4.6.1). Supervisor accesses are not restricted: the profiler reads on the guest's
 * behalf, so SMAP/SMEP do not apply. */
#define PT_ACC_SUPERVISOR 0u
#define PT_ACC_USER       1u

/* The MMU view of one stopped vCPU. Roots are guest-physical addresses of the top table. */
struct pt_mmu {
    enum pt_mode mode;
    enum pt_fault_reason mode_error; /* PT_OK, or PT_NOT_LONG_MODE with mode == PT_MODE_NONE */
    const char *mode_why;            /* human-readable detail for PT_NOT_LONG_MODE */
    unsigned va_bits;                /* 48 or 57 */
    uint64_t addr_mask;       /* entry bits that hold a physical address: [MAXPHYADDR-1:12] */
    uint64_t rsvd_mask;       /* bits reserved in every present entry: [51:MAXPHYADDR], XD */
    bool nxe;                 /* EFER.NXE: bit 63 is XD (else reserved) */
    uint64_t root_user;       /* root for the lower half (VA bit 63 clear) */
    uint64_t root_kernel;     /* root for the upper half */
    uint64_t root_kernel_alt; /* KPTI fallback for the upper half, or UINT64_MAX if none */
};

/* Architectural bit positions used by pt_mmu_init (SDM Vol. 3A §2.5, §4.1.1, Vol. 4 MSR
 * 0xC0000080). */
#define PT_CR0_PE       (1ull << 0)
#define PT_CR0_PG       (1ull << 31)
#define PT_CR4_PAE      (1ull << 5)
#define PT_CR4_LA57     (1ull << 12)
#define PT_CR4_PCIDE    (1ull << 17)
#define PT_EFER_LME     (1ull << 8)
#define PT_EFER_LMA     (1ull << 10)
#define PT_EFER_NXE     (1ull << 11)
#define PT_CR3_KPTI_BIT (1ull << 12) /* Linux PTI: user PGD = kernel PGD + 4 KiB */

/* Derive the mode and roots. CR3 bits [11:0] (PCID, or PWT/PCD) and bits above MAXPHYADDR
 * (LAM, no-flush) are masked. `kernel_cr3` (0 = unknown) overrides the root used for the upper
 * half; without it, a CR3 with bit 12 set gets a fallback root with bit 12 cleared (KPTI: the
 * user PGD maps almost none of the kernel). `phys_bits` is the guest MAXPHYADDR (0 = 52).
 * Returns PT_OK or PT_NOT_LONG_MODE (mmu->mode_why says which bit). */
enum pt_fault_reason pt_mmu_init(struct pt_mmu *mmu, uint64_t cr0, uint64_t cr3, uint64_t cr4,
                                 uint64_t efer, uint64_t kernel_cr3, unsigned phys_bits);

/* True if `va` is canonical for the mode (sign-extended from bit 47 or 56). Inline: the unwinder
 * checks every frame pointer and return address. */
static inline bool pt_canonical(const struct pt_mmu *mmu, uint64_t va)
{
    if (mmu->mode == PT_MODE_NONE)
        return false;
    unsigned top = mmu->va_bits - 1;
    uint64_t high = va >> top; /* bits 63..top must be all 0 or all 1 */
    return high == 0 || high == (UINT64_MAX >> top);
}

/* Result of a successful translation. Permissions are the effective ones over all levels. */
struct pt_xlate {
    uint64_t gpa;       /* guest-physical address of va */
    uint64_t page_size; /* 4096, 2 MiB or 1 GiB */
    bool user;          /* U/S = 1 at every level */
    bool writable;      /* R/W = 1 at every level */
    bool nx;            /* XD set at some level (only with EFER.NXE) */
};

/* Translate va (at most 5 entry reads). The final GPA must be inside guest RAM (one byte
 * checked; callers check their own length with gmem_ptr). Returns 0, or -1 with *fault set. */
int pt_translate(const struct pt_mmu *mmu, const struct gmem *mem, uint64_t va, unsigned access,
                 struct pt_xlate *out, struct pt_fault *fault);

/* Same, from an explicit root (used for the KPTI fallback, and by tests). */
int pt_translate_root(const struct pt_mmu *mmu, const struct gmem *mem, uint64_t root, uint64_t va,
                      unsigned access, struct pt_xlate *out, struct pt_fault *fault);

/* One present leaf mapping found by pt_for_each_mapping. */
struct pt_mapping {
    uint64_t va;        /* first virtual address of the page (canonical) */
    uint64_t gpa;       /* guest-physical address of the page (may lie outside RAM: MMIO) */
    uint64_t page_size; /* 4096, 2 MiB or 1 GiB */
    bool user, writable, nx;
    bool in_ram; /* whole page inside one gmem slot */
};

/* Return nonzero to stop the iteration. */
typedef int (*pt_mapping_cb)(void *ctx, const struct pt_mapping *m);

enum pt_iter_result {
    PT_ITER_DONE = 0, /* the whole range was visited */
    PT_ITER_STOPPED,  /* the callback asked to stop */
    PT_ITER_CAPPED,   /* max_entries page-table entries were read before the end */
    PT_ITER_BAD_MODE, /* not long mode, or the range is not canonical / inverted */
};

/* Visit, in increasing VA order, the present leaf mappings intersecting [va_lo, va_last]
 * (inclusive, both canonical, same half) of the address space selected by the half of va_lo
 * (lower half: root_user; upper half: root_kernel). Entries with reserved bits set and tables
 * outside RAM are skipped. At most `max_entries` entries are read in total, so self-referencing
 * or hostile tables cost a bounded amount of work. */
enum pt_iter_result pt_for_each_mapping(const struct pt_mmu *mmu, const struct gmem *mem,
                                        uint64_t va_lo, uint64_t va_last, unsigned max_entries,
                                        pt_mapping_cb cb, void *ctx);

const char *pt_fault_reason_str(enum pt_fault_reason r);
