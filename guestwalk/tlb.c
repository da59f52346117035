#include "guestwalk/tlb.h"

#include <string.h>

#define PAGE_SIZE 4096u

void gw_tlb_init(struct gw_tlb *t)
{
    memset(t, 0, sizeof(*t));
    t->gen = 1;
}

void gw_tlb_flush(struct gw_tlb *t)
{
    t->gen++;
    if (t->gen == 0) { /* after 2^32 stops: clear for real so no stale entry can match */
        memset(t->e, 0, sizeof(t->e));
        t->gen = 1;
    }
}

/* A read while a copied stack stands in for the guest's (struct gw_tlb_pin): 1 with *out from
 * the copy, -1 with *fault for the window's other bytes, 0 for the guest's own translation. */
static int pinned(const struct gw_tlb_pin *p, uint64_t va, unsigned off, const uint8_t **out,
                  size_t *avail, uint64_t *gpa, struct pt_fault *fault)
{
    if (va >= p->lo && va < p->hi) {
        uint64_t left = p->hi - va;
        *avail = left < PAGE_SIZE - off ? (size_t)left : PAGE_SIZE - off;
        if (gpa)
            *gpa = UINT64_MAX; /* not guest memory */
        *out = p->bytes + (va - p->lo);
        return 1;
    }
    if (va >= p->deny_lo && va < p->deny_hi) {
        *fault = (struct pt_fault){.reason = PT_NOT_PRESENT, .va = va};
        return -1;
    }
    return 0;
}

const uint8_t *gw_tlb_map(struct gw_tlb *t, const struct pt_mmu *mmu, const struct gmem *mem,
                          uint64_t va, unsigned access, size_t *avail, uint64_t *gpa,
                          struct pt_fault *fault)
{
    uint64_t vpage = va >> 12;
    unsigned off = (unsigned)(va & (PAGE_SIZE - 1));
    if (t->pin) {
        const uint8_t *out = NULL;
        int r = pinned(t->pin, va, off, &out, avail, gpa, fault);
        if (r)
            return r > 0 ? out : NULL;
    }
    struct gw_tlb_entry *e = &t->e[vpage & (GW_TLB_ENTRIES - 1)];
    if (e->gen == t->gen && e->va_page == vpage && (e->user_ok || !(access & PT_ACC_USER))) {
        t->hits++;
        *avail = PAGE_SIZE - off;
        if (gpa)
            *gpa = e->gpa + off;
        return e->host + off;
    }
    t->misses++;
    struct pt_xlate x;
    if (pt_translate(mmu, mem, va, access, &x, fault) != 0)
        return NULL;
    if (gpa)
        *gpa = x.gpa;
    uint64_t page_gpa = x.gpa - off;
    uint8_t *host = gmem_ptr(mem, page_gpa, PAGE_SIZE);
    if (host) {
        *e = (struct gw_tlb_entry){
            .va_page = vpage, .gpa = page_gpa, .host = host, .gen = t->gen, .user_ok = x.user};
        *avail = PAGE_SIZE - off;
        return host + off;
    }
    /* The 4 KiB page straddles a slot end (KVM slots are page-aligned, gmem need not be): usable
     * only up to the slot end, and not cached. pt_translate checked that x.gpa is in RAM. */
    uint64_t in_slot = 0;
    uint8_t *p = gmem_span(mem, x.gpa, &in_slot);
    *avail = in_slot < PAGE_SIZE - off ? (size_t)in_slot : PAGE_SIZE - off;
    return p;
}
