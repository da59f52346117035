/* Writes seed inputs (struct gw_fuzz_regs + small memory image) for both guestwalk fuzz targets:
 *   gw_fuzz_seedgen <dir>    -> <dir>/seed-<name>
 * Images are a few pages with hand-placed page tables, so the fuzzer starts from walks that
 * reach deep into the code. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guestwalk/fuzz/fuzz_input.h"
#include "guestwalk/paging.h"

#define PAGES 16
#define P     1ull
#define RW    2ull
#define US    4ull
#define PS    0x80ull

struct img {
    uint8_t mem[PAGES * 4096];
    unsigned used, slot1_from; /* pages at index >= slot1_from live at GW_FUZZ_SLOT1_GPA */
    bool la57;
    struct gw_fuzz_regs r;
};

static uint64_t gpa_of(const struct img *m, unsigned page)
{
    return page < m->slot1_from ? page * 4096ull
                                : GW_FUZZ_SLOT1_GPA + (page - m->slot1_from) * 4096ull;
}

static uint64_t *entry(struct img *m, unsigned page, unsigned idx)
{
    return (uint64_t *)(m->mem + page * 4096 + idx * 8);
}

static unsigned page_of(const struct img *m, uint64_t gpa)
{
    return gpa >= GW_FUZZ_SLOT1_GPA ? m->slot1_from + (unsigned)((gpa - GW_FUZZ_SLOT1_GPA) >> 12)
                                    : (unsigned)(gpa >> 12);
}

static unsigned new_page(struct img *m)
{
    return m->used++;
}

/* Map a 4 KiB VA to a GPA, tables from the bump allocator. Root is page 0. */
static void map(struct img *m, uint64_t va, uint64_t gpa, uint64_t flags)
{
    unsigned table = 0;
    for (unsigned level = m->la57 ? 5 : 4; level > 1; level--) {
        uint64_t *e = entry(m, table, (va >> (12 + 9 * (level - 1))) & 511);
        if (!(*e & P))
            *e = gpa_of(m, new_page(m)) | P | RW | US;
        table = page_of(m, *e & ~0xfffull);
    }
    *entry(m, table, (va >> 12) & 511) = gpa | flags;
}

static void put(struct img *m, unsigned page, unsigned off, uint64_t v)
{
    memcpy(m->mem + page * 4096 + off, &v, 8);
}

static void init(struct img *m, bool la57, unsigned slot1_from)
{
    memset(m, 0, sizeof(*m));
    m->la57 = la57;
    m->used = 1;
    m->slot1_from = slot1_from;
    m->r.cr0 = PT_CR0_PE | PT_CR0_PG;
    m->r.cr3 = 0;
    m->r.cr4 = PT_CR4_PAE | (la57 ? PT_CR4_LA57 : 0);
    m->r.efer = PT_EFER_LME | PT_EFER_LMA | PT_EFER_NXE;
    m->r.split_num = slot1_from < PAGES ? (uint8_t)slot1_from : 0;
}

/* A chain of n frames in `page` (mapped at stack_va), returning into code_va + 0x10*i. */
static void chain(struct img *m, unsigned page, uint64_t stack_va, uint64_t code_va, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned off = 0x100 + i * 0x40;
        put(m, page, off, i + 1 < n ? stack_va + off + 0x40 : 0);
        put(m, page, off + 8, code_va + 0x10 * (i + 1));
    }
    m->r.rsp = stack_va + 0xf8;
    m->r.rbp = stack_va + 0x100;
}

static int write_seed(const char *dir, const char *name, const struct img *m)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite(&m->r, sizeof(m->r), 1, f);
    fwrite(m->mem, 4096, m->used, f);
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    static struct img m;
    int rc = 0;

    /* User walk, 4-level, RIP at push rbp (leaf repair), 6 frames. */
    init(&m, false, PAGES);
    unsigned code = new_page(&m), stack = new_page(&m);
    map(&m, 0x400000, gpa_of(&m, code), P | US);
    map(&m, 0x7fff0000, gpa_of(&m, stack), P | RW | US);
    m.mem[code * 4096 + 0x20] = 0x55;
    chain(&m, stack, 0x7fff0000, 0x400000, 6);
    put(&m, stack, 0xf8, 0x400042); /* return address at [rsp] for the entry case */
    m.r.rip = 0x400020;
    m.r.cpl = 3;
    m.r.va = 0x400000;
    m.r.va_len = 0x80000000;
    rc |= write_seed(dir, "user4-entry", &m);

    /* Kernel walk, LA57, RIP at ret. */
    init(&m, true, PAGES);
    code = new_page(&m);
    stack = new_page(&m);
    map(&m, 0xffffffff81000000ull, gpa_of(&m, code), P);
    map(&m, 0xff11000000001000ull, gpa_of(&m, stack), P | RW);
    m.mem[code * 4096 + 0x30] = 0xc3;
    chain(&m, stack, 0xff11000000001000ull, 0xffffffff81000000ull, 5);
    put(&m, stack, 0xf8, 0xffffffff81000777ull); /* [rsp] at ret */
    m.r.rip = 0xffffffff81000030ull;
    m.r.cpl = 0;
    m.r.va = 0xff11000000000000ull;
    m.r.va_len = 0x10000000;
    rc |= write_seed(dir, "kernel5-ret", &m);

    /* Two slots: stack in slot 1, one frame pointing at a page that maps the hole. */
    init(&m, false, 6);
    code = new_page(&m);
    stack = 7;
    m.used = 8;
    map(&m, 0x400000, gpa_of(&m, code), P | US);
    map(&m, 0x7fff0000, gpa_of(&m, stack), P | RW | US);
    map(&m, 0x7fff1000, 0x80000, P | RW | US); /* GPA in the hole */
    chain(&m, stack, 0x7fff0000, 0x400000, 4);
    put(&m, stack, 0x100 + 3 * 0x40, 0x7fff1010);
    m.r.rip = 0x400004;
    m.r.cpl = 3;
    m.r.va = 0x7fff0ff0;
    m.r.va_len = 0x40;
    rc |= write_seed(dir, "split-mmio", &m);

    /* Large pages and the iterator: 2 MiB and 1 GiB pages, a KPTI-style CR3 with PCID. */
    init(&m, false, PAGES);
    unsigned pdpt = new_page(&m), pd = new_page(&m);
    *entry(&m, 0, 0) = gpa_of(&m, pdpt) | P | RW | US;
    *entry(&m, pdpt, 1) = 0x0 | P | RW | US | PS; /* 1 GiB at 1 GiB */
    *entry(&m, pdpt, 0) = gpa_of(&m, pd) | P | RW | US;
    *entry(&m, pd, 3) = 0x0 | P | US | PS | (1ull << 63); /* 2 MiB at 6 MiB, NX */
    *entry(&m, pd, 4) = 0x0 | P | US | PS | (1ull << 14); /* reserved bit */
    m.r.cr3 = 0x1000 | 5; /* bit 12 set: user PGD of a pair whose kernel half is page 0 */
    m.r.cr4 |= PT_CR4_PCIDE;
    m.r.va = 0;
    m.r.va_len = 0x100000000ull;
    rc |= write_seed(dir, "large-pages", &m);

    /* Not in long mode. */
    init(&m, false, PAGES);
    m.r.cr0 = PT_CR0_PE;
    m.r.rip = 0x1000;
    rc |= write_seed(dir, "real-mode", &m);

    /* A root that maps itself (recursive slot) and a stack inside the page tables. */
    init(&m, false, PAGES);
    *entry(&m, 0, 0) = 0 | P | RW | US;
    *entry(&m, 0, 511) = 0 | P | RW;
    m.r.rsp = 0x8;
    m.r.rbp = 0x10;
    m.r.rip = 0x0;
    m.r.cpl = 3;
    m.r.va = 0;
    m.r.va_len = 0x8000000000ull;
    rc |= write_seed(dir, "self-map", &m);

    if (rc)
        perror("gw_fuzz_seedgen");
    return rc ? 1 : 0;
}
