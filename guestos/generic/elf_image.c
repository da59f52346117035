#include "guestos/module.h"

#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/elf_header.h"
#include "common/elfnote.h"
#include "guestos/generic/elf_dynamic.h"
#include "guestos/generic/link_map.h"

#define PAGE           4096ull
#define MAX_PHOFF      (64ull * 1024) /* program headers sit right after the ELF header */
#define MAX_IMAGE_SPAN (1ull << 40)   /* a module larger than 1 TiB is corrupt */

static uint64_t page_floor(uint64_t v)
{
    return v & ~(PAGE - 1);
}

int discover_elf_at(discover_read_fn read, void *ctx, uint64_t va, struct discover_module *m,
                    struct hv_err *err)
{
    memset(m, 0, sizeof(*m));
    uint8_t raw[sizeof(Elf64_Ehdr)];
    if (!read(ctx, va, raw, sizeof(raw)))
        return hv_errk(err, HV_ERR_GUEST, "ELF header at 0x%" PRIx64 " not mapped", va);
    Elf64_Ehdr eh;
    struct hv_elf_want want = {.max_phnum = DISCOVER_MAX_PHDRS};
    switch (hv_elf64_header(raw, sizeof(raw), &want, &eh)) {
    case HV_ELF_OK:
        break;
    case HV_ELF_TYPE:
        return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": ELF type %u is not loadable", va,
                       eh.e_type);
    case HV_ELF_PHENTSIZE:
    case HV_ELF_PHNUM:
    case HV_ELF_PHOFF:
        return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": bad program header table", va);
    default:
        return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": not an x86-64 ELF64 image", va);
    }
    if (eh.e_phoff > MAX_PHOFF)
        return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": bad program header table", va);
    Elf64_Phdr ph[DISCOVER_MAX_PHDRS];
    if (!read(ctx, va + eh.e_phoff, ph, eh.e_phnum * sizeof(Elf64_Phdr)))
        return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": program headers not mapped", va);

    /* The header is file offset 0, so its link address is that of the PT_LOAD covering offset
     * 0 (p_vaddr - p_offset, page-floored); bias = where it is now - where it was linked. */
    uint64_t link_base = UINT64_MAX;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
            link_base = page_floor(ph[i].p_vaddr);
            break;
        }
    }
    if (link_base == UINT64_MAX)
        return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": no PT_LOAD maps the ELF header", va);
    m->header_va = va;
    m->bias = va - link_base;
    m->e_type = eh.e_type;
    m->start = UINT64_MAX;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        const Elf64_Phdr *p = &ph[i];
        if (p->p_type != PT_LOAD || p->p_memsz == 0)
            continue;
        if (p->p_memsz > MAX_IMAGE_SPAN || p->p_vaddr > UINT64_MAX - p->p_memsz - PAGE ||
            p->p_vaddr < link_base || p->p_vaddr - link_base > MAX_IMAGE_SPAN)
            return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": PT_LOAD %u out of range", va, i);
        uint64_t s = page_floor(p->p_vaddr) + m->bias;
        uint64_t e = page_floor(p->p_vaddr + p->p_memsz + PAGE - 1) + m->bias;
        if (s < m->start)
            m->start = s;
        if (e > m->end)
            m->end = e;
        if (m->nseg < DISCOVER_MAX_SEGS)
            m->seg[m->nseg++] = (struct discover_seg){s, e - s, page_floor(p->p_offset),
                                                      p->p_flags & (PF_R | PF_W | PF_X)};
    }
    if (!m->nseg)
        return hv_errk(err, HV_ERR_GUEST, "0x%" PRIx64 ": no PT_LOAD segments", va);
    m->file_offsets = true;
    for (unsigned i = 0; i < eh.e_phnum && !m->build_id_len; i++) {
        const Elf64_Phdr *p = &ph[i];
        if (p->p_type != PT_NOTE || p->p_filesz == 0 || p->p_filesz > DISCOVER_MAX_NOTE ||
            p->p_vaddr > MAX_IMAGE_SPAN + link_base)
            continue;
        uint8_t notes[DISCOVER_MAX_NOTE];
        if (read(ctx, m->bias + p->p_vaddr, notes, p->p_filesz))
            m->build_id_len = elf_notes_find_build_id(notes, p->p_filesz, m->build_id);
    }
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        bool inside =
            ph[i].p_vaddr <= MAX_IMAGE_SPAN + link_base && ph[i].p_memsz <= MAX_IMAGE_SPAN;
        if (ph[i].p_type == PT_DYNAMIC && inside && !m->dynamic) {
            m->dynamic = m->bias + ph[i].p_vaddr;
            m->dynamic_size = ph[i].p_memsz;
        }
        /* .eh_frame_hdr (LSB Core §10.6.2): where the unwind tables start (guestwalk/cfi.h). */
        if (ph[i].p_type == PT_GNU_EH_FRAME && inside && !m->eh_frame_hdr)
            m->eh_frame_hdr = m->bias + ph[i].p_vaddr;
    }
    struct elf_dynamic d;
    if (elf_dynamic_read(read, ctx, m, &d)) {
        if (d.soname != UINT64_MAX)
            elf_dynamic_string(read, ctx, m, &d, d.soname, m->name, sizeof(m->name));
        if (d.has_debug && d.debug && (d.debug >> 47) == 0)
            m->r_debug = d.debug;
    }
    return 0;
}

static struct discover_module *find_by_bias(struct discover_module *out, size_t n,
                                            const struct link_map_entry *e)
{
    for (size_t i = 0; i < n; i++)
        if (out[i].bias == e->addr && e->ld >= out[i].start && e->ld < out[i].end)
            return &out[i];
    return NULL;
}

/* The shared objects the loader lists: named by their paths, and added when their code was not
 * found from the page tables (a page not yet touched, a header further below than the scan). */
static size_t add_link_map(discover_read_fn read, void *ctx, uint64_t r_debug,
                           struct discover_module *out, size_t n, size_t max)
{
    struct link_map_entry *e = malloc(LINK_MAP_MAX * sizeof(*e));
    bool consistent;
    int k = e ? link_map_read(read, ctx, r_debug, e, LINK_MAP_MAX, &consistent) : -1;
    for (int i = 0; i < k; i++) {
        if (!e[i].name[0] || e[i].addr % PAGE)
            continue; /* the executable (or an unreadable name) */
        struct discover_module *m = find_by_bias(out, n, &e[i]);
        if (!m && n < max) {
            /* A shared object linked at 0 has its header at its bias. */
            m = &out[n];
            if (discover_elf_at(read, ctx, e[i].addr, m, NULL) == 0 && m->bias == e[i].addr &&
                e[i].ld >= m->start && e[i].ld < m->end)
                n++;
            else
                m = NULL;
        }
        if (m)
            snprintf(m->name, sizeof(m->name), "%s", e[i].name);
    }
    free(e);
    return n;
}

size_t discover_modules(discover_read_fn read, void *ctx, const struct discover_range *ranges,
                        size_t nranges, struct discover_module *out, size_t max)
{
    size_t n = 0;
    uint64_t r_debug = 0;
    for (size_t r = 0; r < nranges && n < max; r++) {
        uint64_t start = ranges[r].start;
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = start >= out[i].start && start < out[i].end;
        if (known)
            continue;
        uint64_t page = page_floor(start);
        for (unsigned k = 0; k <= DISCOVER_SCAN_PAGES; k++, page -= PAGE) {
            uint8_t magic[SELFMAG];
            if (!read(ctx, page, magic, SELFMAG) || memcmp(magic, ELFMAG, SELFMAG)) {
                if (page < PAGE)
                    break;
                continue;
            }
            struct discover_module *m = &out[n];
            if (discover_elf_at(read, ctx, page, m, NULL) == 0 && start >= m->start &&
                start < m->end) {
                n++;
                break;
            }
            if (page < PAGE)
                break;
        }
        /* The first executable the loader describes: its link map covers what follows. */
        if (!r_debug && n && out[n - 1].r_debug) {
            r_debug = out[n - 1].r_debug;
            n = add_link_map(read, ctx, r_debug, out, n, max);
        }
    }
    return n;
}
