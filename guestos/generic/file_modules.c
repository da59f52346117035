#include "guestos/generic/file_modules.h"

#include <elf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/elf_header.h"
#include "guestos/generic/generic.h"
#include "guestos/generic/user_modules.h"

#define PAGE 4096ull

/* The image being read: the process's own mappings first, then its file's pages. */
struct file_image {
    struct guestos *os;
    const struct gmem *mem;
    struct pt_mmu mmu;
    struct guestos_file file;
    uint64_t bias; /* run-time - link-time address */
    Elf64_Phdr ph[DISCOVER_MAX_PHDRS];
    unsigned nph;
    unsigned pages_read; /* from the page cache, <= FILE_MODULES_MAX_PAGES */
    uint64_t cached;     /* index of page[], UINT64_MAX: none */
    uint8_t page[PAGE];
};

/* The file offset that run-time address va holds, and how many bytes from it on the same
 * PT_LOAD's file contents; false where no segment's file bytes are (bss, gaps). */
static bool file_offset_of(const struct file_image *im, uint64_t va, uint64_t *off, uint64_t *left)
{
    if (va < im->bias)
        return false;
    uint64_t link = va - im->bias;
    for (unsigned i = 0; i < im->nph; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD || link < p->p_vaddr || link - p->p_vaddr >= p->p_filesz)
            continue;
        *off = p->p_offset + (link - p->p_vaddr);
        *left = p->p_filesz - (link - p->p_vaddr);
        return true;
    }
    return false;
}

static bool cache_page(struct file_image *im, uint64_t index)
{
    if (im->cached == index)
        return true;
    if (im->pages_read >= FILE_MODULES_MAX_PAGES)
        return false;
    im->pages_read++;
    im->cached = UINT64_MAX;
    if (guestos_file_page(im->os, im->mem, &im->file, index, im->page) != 1)
        return false;
    im->cached = index;
    return true;
}

/* discover_read_fn: page by page, mapped pages from the process (what it runs), the others
 * from the file at the offset the program headers give them. */
static bool read_image(void *ctx, uint64_t va, void *dst, size_t len)
{
    struct file_image *im = ctx;
    uint8_t *out = dst;
    while (len) {
        size_t chunk = PAGE - (va & (PAGE - 1));
        if (chunk > len)
            chunk = len;
        if (!discover_guest_read(im->mem, &im->mmu, va, out, chunk)) {
            uint64_t off, left;
            if (!file_offset_of(im, va, &off, &left) || left < chunk || off > UINT64_MAX - chunk ||
                off + chunk > im->file.size)
                return false;
            /* A segment's page and the file's need not share their alignment within the page
             * (p_vaddr = p_offset mod the page size only): copy across two pages then. */
            size_t done = 0;
            while (done < chunk) {
                uint64_t o = off + done;
                size_t in = (size_t)(o & (PAGE - 1)), n = (size_t)(PAGE - in);
                if (n > chunk - done)
                    n = chunk - done;
                if (!cache_page(im, o / PAGE))
                    return false;
                memcpy(out + done, im->page + in, n);
                done += n;
            }
        }
        out += chunk;
        va += chunk;
        len -= chunk;
    }
    return true;
}

/* The run-time address of the image's ELF header, from the file page that run-time page
 * `start` maps: the executable PT_LOAD holding that page fixes the page's link address, so
 * bias = start - that. 0: the headers place that page nowhere executable, or out of range. */
static uint64_t header_va_of(struct file_image *im, uint64_t start, uint64_t index)
{
    uint64_t link_base = UINT64_MAX, link_page = UINT64_MAX;
    if (index > UINT64_MAX / PAGE)
        return 0;
    uint64_t off = index * PAGE;
    for (unsigned i = 0; i < im->nph; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD)
            continue;
        uint64_t voff = p->p_vaddr & (PAGE - 1);
        if (voff != (p->p_offset & (PAGE - 1)) || p->p_filesz > UINT64_MAX - p->p_offset)
            return 0; /* the gABI requires p_vaddr = p_offset (mod the page size) */
        if (p->p_offset == 0 && link_base == UINT64_MAX)
            link_base = p->p_vaddr & ~(PAGE - 1);
        uint64_t first = p->p_offset & ~(PAGE - 1);
        if ((p->p_flags & PF_X) && off >= first && off < p->p_offset + p->p_filesz &&
            link_page == UINT64_MAX)
            link_page = (p->p_vaddr & ~(PAGE - 1)) + (off - first);
    }
    if (link_base == UINT64_MAX || link_page == UINT64_MAX || link_page < link_base ||
        start < link_page - link_base)
        return 0;
    uint64_t header = start - (link_page - link_base);
    im->bias = header - link_base;
    return header;
}

/* The image whose page r->start (the first page of an executable range) maps, found through
 * its file: 0 and *m, or -1. */
static int image_of(struct file_image *im, const struct guestos_as *as,
                    const struct discover_range *r, struct discover_module *m)
{
    if (!guestos_user_page_file(im->os, im->mem, as, r->start, &im->file) ||
        im->file.index == UINT64_MAX || !im->file.size)
        return -1;
    im->pages_read = 0;
    im->cached = UINT64_MAX;
    if (!cache_page(im, 0))
        return -1; /* its first page is not in the page cache */
    Elf64_Ehdr eh;
    struct hv_elf_want want = {.max_phnum = DISCOVER_MAX_PHDRS, .extent = PAGE};
    if (hv_elf64_header(im->page, PAGE, &want, &eh) != HV_ELF_OK ||
        eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > PAGE)
        return -1; /* program headers past the first page: no linker writes them there */
    memcpy(im->ph, im->page + eh.e_phoff, eh.e_phnum * sizeof(Elf64_Phdr));
    im->nph = eh.e_phnum;
    uint64_t header = header_va_of(im, r->start, im->file.index);
    if (!header || (header >> 47) != 0)
        return -1;
    /* The page the process maps must be the file's page the kernel says it is: a page that
     * names another file or index (reused meanwhile, or a guest's lie) would place the image
     * wrongly by whole pages. Code is not relocated, so the bytes are the file's. */
    uint8_t *mapped = malloc(PAGE);
    bool same = mapped && discover_guest_read(im->mem, &im->mmu, r->start, mapped, PAGE) &&
                cache_page(im, im->file.index) && !memcmp(mapped, im->page, PAGE);
    free(mapped);
    if (!same)
        return -1;
    if (discover_elf_at(read_image, im, header, m, NULL) < 0 || r->start < m->start ||
        r->start >= m->end || m->bias != im->bias)
        return -1;
    return 0;
}

static bool covered(const struct discover_module *out, size_t n, uint64_t va)
{
    for (size_t i = 0; i < n; i++)
        if (va >= out[i].start && va < out[i].end)
            return true;
    return false;
}

size_t guestos_file_modules(struct guestos *os, const struct gmem *mem, const struct guestos_as *as,
                            const struct discover_range *ranges, size_t nranges,
                            struct discover_module *out, size_t n, size_t max)
{
    if (n >= max || !os || !os->ops->user_page_file || !os->ops->file_page)
        return n;
    unsigned looked = 0;
    struct file_image *im = NULL;
    for (size_t i = 0; i < nranges && n < max && looked < FILE_MODULES_MAX_RANGES; i++) {
        if (covered(out, n, ranges[i].start))
            continue;
        if (!im) {
            im = malloc(sizeof(*im));
            if (!im || !guestos_generic_user_mmu(mem, as, &im->mmu))
                break;
            im->os = os;
            im->mem = mem;
        }
        looked++;
        struct discover_module *m = &out[n];
        bool dup = false;
        if (image_of(im, as, &ranges[i], m) < 0)
            continue;
        for (size_t j = 0; j < n && !dup; j++)
            dup = out[j].header_va == m->header_va;
        n += !dup;
    }
    free(im);
    return n;
}
