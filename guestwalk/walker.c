#include "guestwalk/walker.h"

#include <string.h>

int gw_walker_init(struct gw_walker *w, const struct gmem *mem, const struct gw_config *cfg,
                   struct hv_err *err)
{
    memset(w, 0, sizeof(*w));
    w->mem = mem;
    if (cfg)
        w->cfg = *cfg;
    if (w->cfg.max_depth == 0)
        w->cfg.max_depth = GW_DEFAULT_MAX_DEPTH;
    if (w->cfg.stack_window == 0)
        w->cfg.stack_window = GW_DEFAULT_STACK_WINDOW;
    if (w->cfg.max_frame == 0)
        w->cfg.max_frame = GW_DEFAULT_MAX_FRAME;
    gw_tlb_init(&w->tlb);
    /* Not in long mode until the first gw_walker_begin. */
    pt_mmu_init(&w->mmu, 0, 0, 0, 0, 0, w->cfg.phys_bits);
    if (gw_leaf_open(&w->dec, err) != 0)
        return hv_err_prefix(err, "guest walker");
    return 0;
}

void gw_walker_fini(struct gw_walker *w)
{
    gw_leaf_close(&w->dec);
}

enum pt_fault_reason gw_walker_begin(struct gw_walker *w, const struct gw_snapshot *snap)
{
    w->snap = *snap;
    w->cfi = NULL;
    gw_tlb_flush(&w->tlb);
    return pt_mmu_init(&w->mmu, snap->cr0, snap->cr3, snap->cr4, snap->efer, snap->kernel_cr3,
                       w->cfg.phys_bits);
}

static unsigned access_of(bool user)
{
    return user ? PT_ACC_USER : PT_ACC_SUPERVISOR;
}

int gw_translate(struct gw_walker *w, uint64_t va, bool user, uint64_t *gpa, struct pt_fault *fault)
{
    struct pt_fault scratch;
    size_t avail;
    if (!gw_tlb_map(&w->tlb, &w->mmu, w->mem, va, access_of(user), &avail, gpa,
                    fault ? fault : &scratch))
        return -1;
    return 0;
}

int gw_read_virt(struct gw_walker *w, uint64_t va, void *buf, size_t len, bool user,
                 struct pt_fault *fault)
{
    struct pt_fault scratch;
    struct pt_fault *f = fault ? fault : &scratch;
    if (len > GW_READ_VIRT_MAX || (len > 0 && va + (len - 1) < va)) {
        /* Too long, or wrapping past 2^64 into the other half: refuse rather than clamp. */
        memset(f, 0, sizeof(*f));
        f->reason = PT_NON_CANONICAL;
        f->va = va;
        return -1;
    }
    uint8_t *out = buf;
    while (len > 0) {
        size_t avail;
        const uint8_t *p =
            gw_tlb_map(&w->tlb, &w->mmu, w->mem, va, access_of(user), &avail, NULL, f);
        if (!p)
            return -1;
        size_t n = avail < len ? avail : len;
        memcpy(out, p, n);
        out += n;
        va += n;
        len -= n;
    }
    return 0;
}
