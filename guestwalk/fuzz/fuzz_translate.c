/* libFuzzer: page-table translation, virtual reads and the mapping iterator on an arbitrary
 * memory image and control registers. Invariants are checked with __builtin_trap(). */
#include <stdint.h>
#include <stdlib.h>

#include "guestwalk/fuzz/fuzz_input.h"
#include "guestwalk/paging.h"
#include "guestwalk/walker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct iter_ctx {
    uint64_t lo, last, prev;
    unsigned n;
};

static int on_mapping(void *ctx, const struct pt_mapping *m)
{
    struct iter_ctx *c = ctx;
    if (m->page_size != 4096 && m->page_size != (2u << 20) && m->page_size != (1u << 30))
        __builtin_trap();
    if (m->va & (m->page_size - 1))
        __builtin_trap();
    if (m->va > c->last || m->va + (m->page_size - 1) < c->lo) /* must intersect the range */
        __builtin_trap();
    if (c->n > 0 && m->va <= c->prev) /* strictly increasing VA order */
        __builtin_trap();
    c->prev = m->va;
    c->n++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_fuzz_regs r;
    struct gmem mem;
    uint8_t *image;
    if (gw_fuzz_parse(data, size, &r, &mem, &image) != 0)
        return 0;

    struct pt_mmu mmu;
    pt_mmu_init(&mmu, r.cr0, r.cr3, r.cr4, r.efer, r.kernel_cr3, r.phys_bits);
    for (unsigned access = 0; access < 2; access++) {
        struct pt_xlate x;
        struct pt_fault f;
        if (pt_translate(&mmu, &mem, r.va, access, &x, &f) == 0) {
            if (!gmem_ptr(&mem, x.gpa, 1) || (access == PT_ACC_USER && !x.user))
                __builtin_trap();
        } else if (f.reason == PT_OK || f.va != r.va || f.level > 5) {
            __builtin_trap();
        }
    }

    uint64_t last = r.va + (r.va_len & 0xffffffffull);
    if (last >= r.va) {
        struct iter_ctx c = {.lo = r.va, .last = last};
        enum pt_iter_result res = pt_for_each_mapping(&mmu, &mem, r.va, last, 4096, on_mapping, &c);
        if (res == PT_ITER_STOPPED)
            __builtin_trap();
    }

    static struct gw_walker w; /* capstone opened once per process */
    static int ready;
    if (!ready) {
        if (gw_walker_init(&w, &mem, NULL, NULL) != 0)
            abort();
        ready = 1;
    }
    w.mem = &mem;
    struct gw_snapshot cpu = {.cr0 = r.cr0,
                              .cr3 = r.cr3,
                              .cr4 = r.cr4,
                              .efer = r.efer,
                              .kernel_cr3 = r.kernel_cr3,
                              .cpl = r.cpl};
    gw_walker_begin(&w, &cpu);
    static uint8_t buf[GW_READ_VIRT_MAX];
    size_t n = (size_t)(r.va_len % (sizeof(buf) + 1));
    for (unsigned pass = 0; pass < 2; pass++) /* second pass: through the cache */
        gw_read_virt(&w, r.va, buf, n, r.cpl == 3, NULL);
    free(image);
    return 0;
}
