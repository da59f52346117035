#include "guest_image.h"

#include <stdlib.h>
#include <string.h>

#include "guestwalk/paging.h"

#define PAGE 4096ull

int gimg_init(struct gimg *g, bool la57)
{
    memset(g, 0, sizeof(*g));
    g->ram0 = aligned_alloc(PAGE, GIMG_RAM0_SIZE);
    g->ram1 = aligned_alloc(PAGE, GIMG_RAM1_SIZE);
    if (!g->ram0 || !g->ram1) {
        gimg_free(g);
        return -1;
    }
    memset(g->ram0, 0, GIMG_RAM0_SIZE);
    memset(g->ram1, 0, GIMG_RAM1_SIZE);
    gmem_init(&g->mem);
    if (gmem_add(&g->mem, GIMG_RAM0_GPA, GIMG_RAM0_SIZE, g->ram0, NULL) != 0 ||
        gmem_add(&g->mem, GIMG_RAM1_GPA, GIMG_RAM1_SIZE, g->ram1, NULL) != 0) {
        gimg_free(g);
        return -1;
    }
    g->la57 = la57;
    g->next_page = 1ull << 20; /* keep the first MiB free for tests that want fixed GPAs */
    g->ram1_next = GIMG_RAM1_GPA;
    g->root = gimg_alloc_page(g);
    return 0;
}

void gimg_free(struct gimg *g)
{
    free(g->ram0);
    free(g->ram1);
    g->ram0 = g->ram1 = NULL;
}

uint64_t gimg_alloc_page(struct gimg *g)
{
    if (g->next_page + PAGE > GIMG_RAM0_SIZE)
        return 0;
    uint64_t gpa = g->next_page;
    g->next_page += PAGE;
    memset(g->ram0 + gpa, 0, PAGE);
    return gpa;
}

uint64_t gimg_alloc_page1(struct gimg *g)
{
    if (g->ram1_next + PAGE > GIMG_RAM1_GPA + GIMG_RAM1_SIZE)
        return 0;
    uint64_t gpa = g->ram1_next;
    g->ram1_next += PAGE;
    memset(g->ram1 + (gpa - GIMG_RAM1_GPA), 0, PAGE);
    return gpa;
}

uint64_t gimg_new_root(struct gimg *g)
{
    return gimg_alloc_page(g);
}

void *gimg_host(struct gimg *g, uint64_t gpa)
{
    return gmem_ptr(&g->mem, gpa, 1);
}

static unsigned top_level(const struct gimg *g)
{
    return g->la57 ? 5 : 4;
}

static uint64_t *entry_in(struct gimg *g, uint64_t table, uint64_t va, unsigned level)
{
    unsigned idx = (unsigned)(va >> (12 + 9 * (level - 1))) & 511;
    return gmem_ptr(&g->mem, table + idx * 8ull, 8);
}

uint64_t *gimg_map_in(struct gimg *g, uint64_t root, uint64_t va, uint64_t gpa, uint64_t size,
                      uint64_t flags)
{
    unsigned leaf = size == (1ull << 30) ? 3 : size == (2ull << 20) ? 2 : 1;
    uint64_t table = root;
    for (unsigned level = top_level(g); level > leaf; level--) {
        uint64_t *e = entry_in(g, table, va, level);
        if (!e)
            return NULL;
        if (!(*e & GIMG_P)) {
            uint64_t page = gimg_alloc_page(g);
            if (!page)
                return NULL;
            *e = page | GIMG_USER_RW;
        } else if (*e & GIMG_PS) {
            return NULL;
        }
        table = *e & 0x000ffffffffff000ull;
    }
    uint64_t *e = entry_in(g, table, va, leaf);
    if (!e)
        return NULL;
    *e = gpa | flags | (leaf > 1 ? GIMG_PS : 0);
    return e;
}

uint64_t *gimg_map(struct gimg *g, uint64_t va, uint64_t gpa, uint64_t size, uint64_t flags)
{
    return gimg_map_in(g, g->root, va, gpa, size, flags);
}

uint64_t *gimg_entry(struct gimg *g, uint64_t va, unsigned level)
{
    uint64_t table = g->root;
    for (unsigned l = top_level(g); l >= level; l--) {
        uint64_t *e = entry_in(g, table, va, l);
        if (!e || l == level)
            return e;
        if (!(*e & GIMG_P) || (*e & GIMG_PS))
            return NULL;
        table = *e & 0x000ffffffffff000ull;
    }
    return NULL;
}

int gimg_map_fresh(struct gimg *g, uint64_t va, uint64_t len, uint64_t flags)
{
    for (uint64_t off = 0; off < len; off += PAGE) {
        uint64_t page = gimg_alloc_page(g);
        if (!page || !gimg_map(g, va + off, page, PAGE, flags))
            return -1;
    }
    return 0;
}

static int mmu_of(const struct gimg *g, struct pt_mmu *mmu)
{
    struct gw_snapshot c = gimg_cpu(g, 0, 0, 0, 0);
    return pt_mmu_init(mmu, c.cr0, c.cr3, c.cr4, c.efer, 0, 0) == PT_OK ? 0 : -1;
}

int gimg_write(struct gimg *g, uint64_t va, const void *src, uint64_t len)
{
    struct pt_mmu mmu;
    if (mmu_of(g, &mmu) != 0)
        return -1;
    const uint8_t *in = src;
    while (len > 0) {
        struct pt_xlate x;
        if (pt_translate(&mmu, &g->mem, va, PT_ACC_SUPERVISOR, &x, NULL) != 0)
            return -1;
        uint64_t n = PAGE - (va & (PAGE - 1));
        if (n > len)
            n = len;
        void *dst = gmem_ptr(&g->mem, x.gpa, n);
        if (!dst)
            return -1;
        memcpy(dst, in, n);
        in += n;
        va += n;
        len -= n;
    }
    return 0;
}

int gimg_write_u64(struct gimg *g, uint64_t va, uint64_t v)
{
    return gimg_write(g, va, &v, sizeof(v));
}

struct gw_snapshot gimg_cpu(const struct gimg *g, uint64_t rip, uint64_t rsp, uint64_t rbp,
                            uint8_t cpl)
{
    return (struct gw_snapshot){
        .rip = rip,
        .rsp = rsp,
        .rbp = rbp,
        .cr0 = PT_CR0_PE | PT_CR0_PG,
        .cr3 = g->root,
        .cr4 = PT_CR4_PAE | (g->la57 ? PT_CR4_LA57 : 0),
        .efer = PT_EFER_LME | PT_EFER_LMA | PT_EFER_NXE,
        .cpl = cpl,
    };
}

int gimg_write_chain(struct gimg *g, uint64_t fp0, unsigned n, uint64_t gap, const uint64_t *ret)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t fp = fp0 + i * gap;
        uint64_t next = i + 1 < n ? fp + gap : 0;
        if (gimg_write_u64(g, fp, next) != 0 || gimg_write_u64(g, fp + 8, ret[i]) != 0)
            return -1;
    }
    return 0;
}
