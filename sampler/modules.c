/* Module discovery for guest address spaces, on the drain thread (issue "symbolize"): the
 * executable user mappings come from the guest's own page tables, the ELF images from guest
 * memory (symbolize/discover.c), and the result goes into the trace as module and mapping
 * records so `hvprof report` can symbolize later from the file plus symbol files.
 *
 * This reads guest memory while the guest runs: page tables may change under us, so everything
 * is bounded and validated (as on the exit path), and a process found mid-change simply yields
 * fewer modules. */
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"
#include "guestwalk/paging.h"
#include "sampler/sampler_priv.h"
#include "symbolize/discover.h"
#include "symbolize/discover_fxt.h"
#include "symbolize/discover_guest.h"

#define MOD_MAX_PER_PROC 32 /* modules kept per address space */

/* Modules and mappings already written (symbolize/discover_fxt.h dedupes by build-id). */
struct sampler_modules {
    struct discover_registry reg;
};

struct sampler_modules *sampler_modules_create(void)
{
    struct sampler_modules *m = calloc(1, sizeof(*m));
    if (m)
        discover_registry_init(&m->reg);
    return m;
}

void sampler_modules_destroy(struct sampler_modules *m)
{
    if (!m)
        return;
    discover_registry_free(&m->reg);
    free(m);
}

int sampler_modules_kernel_elf(struct sampler *s, const char *path, struct hv_err *err)
{
    return discover_record_kernel_elf(&s->w, &s->mods->reg, path, s->start_ns, err);
}

int sampler_modules_discover(struct sampler *s, uint32_t proc, const struct id_proc_info *info,
                             struct hv_err *err)
{
    /* A PTI process: its kernel PGD (the canonical root) marks every user entry NX, so the
     * user half is read through the user PGD, 4 KiB above. */
    uint64_t root = info->cr3;
    if (pti_is_user_root(vm_gmem(s->vm), root | PTI_USER_BIT, ID_CR3_ADDR_MASK))
        root |= PTI_USER_BIT;
    struct pt_mmu mmu;
    if (pt_mmu_init(&mmu, info->cr0, root, info->cr4, info->efer, 0, 0) != PT_OK)
        return 0; /* not long mode: nothing to discover, not an error */
    struct discover_module found[MOD_MAX_PER_PROC];
    size_t n = discover_guest_modules(vm_gmem(s->vm), &mmu, found, MOD_MAX_PER_PROC, NULL);
    return discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(proc), found, n,
                           info->first_ts, err);
}
