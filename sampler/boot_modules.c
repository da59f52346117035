/* What the VMM itself loaded, recorded when the recording begins (sampler_attach), in guest
 * address space 0: a guest kernel ELF at its link addresses, a bzImage's decompressor, the
 * reset vector where wall mode's not-yet-started vCPUs wait. sampler_priv.h says why each. */
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"

int sampler_modules_kernel_image(struct sampler *s, const char *name,
                                 const struct boot_kernel_image *img, struct hv_err *err)
{
    struct discover_module m = {.start = UINT64_MAX, .e_type = 2 /* ET_EXEC */};
    for (unsigned i = 0; i < img->nseg && m.nseg < DISCOVER_MAX_SEGS; i++) {
        /* One mapping per PT_LOAD segment, at its link address: a higher-half kernel with a
         * low boot stub has two disjoint ranges, not one span between them. */
        uint64_t lo = img->seg[i].vaddr & ~0xfffull;
        uint64_t hi = (img->seg[i].vaddr + img->seg[i].memsz + 0xfff) & ~0xfffull;
        if (hi <= lo)
            continue;
        m.seg[m.nseg++] = (struct discover_seg){.start = lo,
                                                .size = hi - lo,
                                                .file_offset = img->seg[i].offset & ~0xfffull,
                                                .flags = img->seg[i].flags};
        if (lo < m.start)
            m.start = lo;
        if (hi > m.end)
            m.end = hi;
    }
    if (m.nseg == 0)
        return hv_errf(err, "%s: no PT_LOAD segments to record", name);
    m.header_va = m.start;
    m.file_offsets = true; /* the file the VMM loaded: its program headers say */
    memcpy(m.build_id, img->build_id, img->build_id_len);
    m.build_id_len = img->build_id_len;
    snprintf(m.name, sizeof(m.name), "%s", name);
    return discover_record(&s->w, &s->modules, hvfxt_koid_guest_process(0), &m, 1, s->start_ns,
                           err) < 0
               ? -1
               : 0;
}

/* One module [start, end) in guest address space 0 with one symbol [sym, end). */
static int record_labelled_range(struct sampler *s, const char *module, uint64_t start,
                                 uint64_t end, const char *symbol, uint64_t sym, struct hv_err *err)
{
    struct discover_module m = {
        .header_va = start,
        .start = start,
        .end = end,
        .e_type = 2, /* ET_EXEC */
        .nseg = 1,
        .seg = {{.start = start, .size = end - start, .flags = PF_R | PF_X}},
    };
    snprintf(m.name, sizeof(m.name), "%s", module);
    int64_t id = discover_record_module(&s->w, &s->modules, hvfxt_koid_guest_process(0), &m,
                                        s->start_ns, err);
    if (id == -1)
        return -1;
    if (id < 0)
        return 0; /* no room in the metadata budget: counted there */
    struct hvfxt_symbol syms[] = {
        {.addr = sym, .type = 'T', .name = symbol, .name_len = strlen(symbol)},
        {.addr = end, .type = 0, .name = "", .name_len = 0}, /* the end of its code */
    };
    return hvfxt_write_symbols(&s->w, (uint64_t)id, syms, 2, err);
}

int sampler_modules_decompressor(struct sampler *s, uint64_t start, uint64_t end,
                                 struct hv_err *err)
{
    /* Identity-mapped (the decompressor runs on page tables of its own that map guest-physical
     * addresses 1:1), so its guest-physical range is its virtual one. One symbol spans it: the
     * bzImage's code has no symbol table. */
    start &= ~0xfffull;
    end = (end + 0xfff) & ~0xfffull;
    return record_labelled_range(s, SAMPLER_DECOMPRESSOR_MODULE_NAME, start, end,
                                 SAMPLER_DECOMPRESSOR_SYMBOL, start, err);
}

int sampler_modules_reset_vector(struct sampler *s, struct hv_err *err)
{
    return record_labelled_range(s, SAMPLER_RESET_MODULE_NAME, 0xf000, 0x10000,
                                 SAMPLER_RESET_SYMBOL, 0xfff0, err);
}
