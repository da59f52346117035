/* Loads a static ELF64 x86-64 executable (System V gABI, "Program Loading") into a user address
 * space at the addresses the linker chose. Each PT_LOAD's pages get the file bytes of the whole
 * page range, so the ELF header, program headers and PT_NOTE (build ID), which the linker puts
 * in the first PT_LOAD at offset 0, are readable in user memory exactly as in the file.
 *
 * A process that gives its memory back (spawned: docs/test-guest.md, "Processes that come and
 * go") shares its program's read-only pages with the program's other such processes: the first
 * load copies them, later loads map the same frames (PTE_SHARED), as a page cache would. Its
 * writable pages may be another process's old ones: its crt0 zeroes .bss. */
#include "kernel.h"

struct elf64_ehdr {
    u8 ident[16];
    u16 type, machine;
    u32 version;
    u64 entry, phoff, shoff;
    u32 flags;
    u16 ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct elf64_phdr {
    u32 type, flags;
    u64 offset, vaddr, paddr, filesz, memsz, align;
};

#define PT_LOAD   1
#define PF_W      2
#define ET_EXEC   2
#define EM_X86_64 62

#define RO_CACHES      8
#define RO_CACHE_PAGES 64

/* A program's read-only pages, as its first shared load copied them. */
struct ro_cache {
    const u8 *img;
    bool complete; /* filled by a whole load */
    int n;
    u64 va[RO_CACHE_PAGES], pa[RO_CACHE_PAGES];
};
static struct ro_cache ro_caches[RO_CACHES];
static spinlock_t ro_lock;

/* Whether any PT_LOAD that covers page va is writable: the page's flags are their union. */
static bool page_writable(const struct elf64_phdr *ph, int n, u64 va)
{
    for (int i = 0; i < n; i++)
        if (ph[i].type == PT_LOAD && (ph[i].flags & PF_W) && va + 4096 > ph[i].vaddr &&
            va < ph[i].vaddr + ph[i].memsz)
            return true;
    return false;
}

static struct ro_cache *cache_of(const u8 *img)
{
    for (int i = 0; i < RO_CACHES; i++)
        if (ro_caches[i].img == img)
            return &ro_caches[i];
    for (int i = 0; i < RO_CACHES; i++)
        if (!ro_caches[i].img) {
            ro_caches[i].img = img;
            return &ro_caches[i];
        }
    return NULL;
}

static u64 cached_page(const struct ro_cache *c, u64 va)
{
    for (int i = 0; c && c->complete && i < c->n; i++)
        if (c->va[i] == va)
            return c->pa[i];
    return 0;
}

int elf_load(u64 pml4, const u8 *img, u64 size, u64 *entry, const char **why, bool shared,
             u64 *lo, u64 *hi)
{
    *lo = USER_IMAGE_MAX;
    *hi = USER_IMAGE_MIN;
    const struct elf64_ehdr *eh = (const void *)img;
    if (size < sizeof(*eh) ||
        memcmp(eh->ident,
               "\x7f"
               "ELF",
               4) ||
        eh->ident[4] != 2 || eh->ident[5] != 1 || eh->type != ET_EXEC || eh->machine != EM_X86_64)
        return *why = "not a static ELF64 x86-64 executable", -1;
    if (eh->phentsize != sizeof(struct elf64_phdr) || eh->phnum > 16 || eh->phoff > size ||
        (u64)eh->phnum * sizeof(struct elf64_phdr) > size - eh->phoff)
        return *why = "bad program headers", -1;
    const struct elf64_phdr *ph = (const void *)(img + eh->phoff);
    int loaded = 0;
    spin_lock(&ro_lock);
    struct ro_cache *cache = shared ? cache_of(img) : NULL;
    bool filling = cache && !cache->complete;
    for (int i = 0; i < eh->phnum; i++) {
        const struct elf64_phdr *p = &ph[i];
        if (p->type != PT_LOAD || p->memsz == 0)
            continue;
        if (p->filesz > p->memsz || p->offset > size || p->filesz > size - p->offset ||
            p->vaddr < USER_IMAGE_MIN || p->vaddr >= USER_IMAGE_MAX ||
            p->memsz > USER_IMAGE_MAX - p->vaddr || (p->vaddr & 0xfff) != (p->offset & 0xfff))
            return spin_unlock(&ro_lock), *why = "bad PT_LOAD segment", -1;
        u64 flags = PTE_U | ((p->flags & PF_W) ? PTE_W : 0);
        u64 file_start =
            p->offset & ~0xfffull; /* the page-aligned file range backing the VA range */
        u64 file_end = p->offset + p->filesz;
        if ((p->vaddr & ~0xfffull) < *lo)
            *lo = p->vaddr & ~0xfffull;
        if (p->vaddr + p->memsz > *hi)
            *hi = p->vaddr + p->memsz;
        for (u64 va = p->vaddr & ~0xfffull; va < p->vaddr + p->memsz; va += 4096) {
            /* Pages shared by two segments (same page, different flags) are mapped once, with
             * the union of the flags, by loading each segment's bytes into the same frame. */
            u64 *pte = vm_pte(pml4, va);
            bool ro = cache && !page_writable(ph, eh->phnum, va);
            if (!(*pte & PTE_P)) {
                u64 hit = ro ? cached_page(cache, va) : 0;
                if (hit) {
                    *pte = hit | PTE_P | PTE_SHARED;
                } else if (ro && filling && cache->n < RO_CACHE_PAGES) {
                    *pte = phys_alloc(4096) | PTE_P | PTE_SHARED;
                    cache->va[cache->n] = va;
                    cache->pa[cache->n++] = *pte & PTE_ADDR;
                } else {
                    *pte = (shared ? page_alloc(false) : phys_alloc(4096)) | PTE_P;
                }
            }
            *pte |= flags;
            u64 pa = *pte & PTE_ADDR;
            if ((*pte & PTE_SHARED) && !filling)
                continue; /* the program's own bytes already */
            u64 off = file_start + (va - (p->vaddr & ~0xfffull));
            /* Bytes of this page that the segment covers: [seg_lo, seg_hi) in page offsets. */
            u64 seg_lo = va < p->vaddr ? p->vaddr - va : 0;
            u64 lo = off + seg_lo;
            u64 hi = off + 4096 < file_end ? off + 4096 : file_end;
            /* Page 0 of the first segment also carries the bytes before p_offset (ELF header). */
            if (va == (p->vaddr & ~0xfffull) && file_start == 0)
                lo = 0;
            if (lo < hi)
                memcpy((u8 *)phys_to_virt(pa) + (lo - off), img + lo, hi - lo);
        }
        loaded++;
    }
    if (filling)
        cache->complete = true;
    spin_unlock(&ro_lock);
    if (!loaded)
        return *why = "no PT_LOAD segments", -1;
    if (eh->entry < USER_IMAGE_MIN || eh->entry >= USER_IMAGE_MAX)
        return *why = "bad entry point", -1;
    *entry = eh->entry;
    return 0;
}
