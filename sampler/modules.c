/* Module discovery for guest address spaces, on the drain thread: the OS layer finds the ELF
 * images of an address space (guestos/), and the result goes into the trace as module and
 * mapping records (module_registry.c) so `hvprof report` can symbolize later from the file plus
 * symbol files.
 *
 * This reads guest memory while the guest runs: page tables may change under us, so everything
 * is bounded and validated (as on the exit path), and a process found mid-change simply yields
 * fewer modules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/module_registry.h"
#include "sampler/sampler_priv.h"

#define MOD_MAX_PER_PROC 32 /* modules kept per address space */

/* Modules and mappings already written (sampler/module_registry.h dedupes by build-id). */
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
        m.seg[m.nseg++] =
            (struct discover_seg){.start = lo, .size = hi - lo, .flags = img->seg[i].flags};
        if (lo < m.start)
            m.start = lo;
        if (hi > m.end)
            m.end = hi;
    }
    if (m.nseg == 0)
        return hv_errf(err, "%s: no PT_LOAD segments to record", name);
    m.header_va = m.start;
    memcpy(m.build_id, img->build_id, img->build_id_len);
    m.build_id_len = img->build_id_len;
    snprintf(m.name, sizeof(m.name), "%s", name);
    return discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(0), &m, 1, s->start_ns,
                           err) < 0
               ? -1
               : 0;
}

int64_t sampler_modules_record_kernel(struct sampler *s, const struct discover_module *m,
                                      uint64_t ts, struct hv_err *err)
{
    if (discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(0), m, 1, ts, err) < 0)
        return -1;
    int64_t id =
        discover_registry_id(&s->mods->reg, m->build_id, m->build_id_len, m->name, m->header_va);
    return id >= 0 ? id : hv_errf(err, "the kernel's module record is not in the registry");
}

int sampler_modules_discover(struct sampler *s, uint32_t proc, const struct id_proc_info *info,
                             struct hv_err *err)
{
    struct discover_module found[MOD_MAX_PER_PROC];
    struct guestos_as as = {info->cr0, info->cr3, info->cr4, info->efer};
    size_t n = guestos_discover_modules(&s->os, s->mem, &as, found, MOD_MAX_PER_PROC);
    return discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(proc), found, n,
                           info->first_ts, err);
}
