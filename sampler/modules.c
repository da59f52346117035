/* Module discovery for guest address spaces, on the drain thread (issue "symbolize"): the
 * executable user mappings come from the guest's own page tables, the ELF images from guest
 * memory (symbolize/discover.c), and the result goes into the trace as module and mapping
 * records so `hvprof report` can symbolize later from the file plus symbol files.
 *
 * This reads guest memory while the guest runs: page tables may change under us, so everything
 * is bounded and validated (as on the exit path), and a process found mid-change simply yields
 * fewer modules. */
#include <stdlib.h>
#include <string.h>

#include "fxt/hvprof_format.h"
#include "guestwalk/paging.h"
#include "sampler/sampler_priv.h"
#include "symbolize/discover.h"
#include "symbolize/discover_fxt.h"

#define MOD_MAX_RANGES   64  /* executable ranges examined per address space */
#define MOD_MAX_PER_PROC 32
#define MOD_PT_ENTRIES   (1u << 18) /* page-table entries visited per address space */

/* Modules and mappings already written (symbolize/discover_fxt.h dedupes by build-id). */
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

int sampler_modules_kernel_elf(struct sampler *s, const char *path, struct hv_err *err)
{
    return discover_record_kernel_elf(&s->w, &s->mods->reg, path, s->start_ns, err);
}

struct as_reader {
    struct pt_mmu mmu;
    const struct gmem *mem;
};

static bool read_user(void *ctx, uint64_t va, void *dst, size_t len)
{
    struct as_reader *r = ctx;
    uint8_t *out = dst;
    while (len > 0) {
        struct pt_xlate x;
        struct pt_fault f;
        if (pt_translate(&r->mmu, r->mem, va, PT_ACC_USER, &x, &f) < 0)
            return false;
        uint64_t in_page = 4096 - (va & 4095);
        size_t n = len < in_page ? len : (size_t)in_page;
        if (!gmem_read(r->mem, x.gpa, out, n))
            return false;
        out += n;
        va += n;
        len -= n;
    }
    return true;
}

struct range_collect {
    struct discover_range r[MOD_MAX_RANGES];
    size_t n;
};

static int collect_exec(void *ctx, const struct pt_mapping *m)
{
    struct range_collect *c = ctx;
    if (!m->user || m->nx || !m->in_ram)
        return 0;
    if (c->n > 0 && c->r[c->n - 1].end == m->va) {
        c->r[c->n - 1].end += m->page_size;
        return 0;
    }
    if (c->n == MOD_MAX_RANGES)
        return 1;
    c->r[c->n++] = (struct discover_range){m->va, m->va + m->page_size};
    return 0;
}

int sampler_modules_discover(struct sampler *s, uint32_t proc, const struct id_proc_info *info,
                             struct hv_err *err)
{
    struct as_reader rd = {.mem = vm_gmem(s->vm)};
    if (pt_mmu_init(&rd.mmu, info->cr0, info->cr3, info->cr4, info->efer, 0, 0) != PT_OK)
        return 0; /* not long mode: nothing to discover, not an error */
    uint64_t user_last = rd.mmu.va_bits == 57 ? 0x00ffffffffffffffull : 0x00007fffffffffffull;
    struct range_collect rc = {.n = 0};
    pt_for_each_mapping(&rd.mmu, rd.mem, 0, user_last, MOD_PT_ENTRIES, collect_exec, &rc);
    if (rc.n == 0)
        return 0;
    struct discover_module found[MOD_MAX_PER_PROC];
    size_t n = discover_modules(read_user, &rd, rc.r, rc.n, found, MOD_MAX_PER_PROC);
    return discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(proc), found, n,
                           info->first_ts, err);
}
