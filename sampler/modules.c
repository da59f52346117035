/* Module discovery for guest address spaces, on the drain thread (issue "symbolize"): the
 * executable user mappings come from the guest's own page tables, the ELF images from guest
 * memory (symbolize/discover.c), and the result goes into the trace as module and mapping
 * records so `hvprof report` can symbolize later from the file plus symbol files.
 *
 * This reads guest memory while the guest runs: page tables may change under us, so everything
 * is bounded and validated (as on the exit path), and a process found mid-change simply yields
 * fewer modules. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "fxt/hvprof_format.h"
#include "guestwalk/paging.h"
#include "sampler/sampler_priv.h"
#include "symbolize/discover.h"

#define MOD_MAX          256 /* distinct modules in one recording */
#define MOD_MAX_RANGES   64  /* executable ranges examined per address space */
#define MOD_MAX_PER_PROC 32
#define MOD_PT_ENTRIES   (1u << 18) /* page-table entries visited per address space */

struct known_module {
    uint8_t build_id[64];
    uint32_t build_id_len;
    uint64_t header_va; /* for modules without a build id: (header address, name) identify */
    char name[DISCOVER_NAME_MAX];
    uint64_t id;
};

struct sampler_modules {
    struct known_module mod[MOD_MAX];
    unsigned n;
};

struct sampler_modules *sampler_modules_create(void)
{
    return calloc(1, sizeof(struct sampler_modules));
}

void sampler_modules_destroy(struct sampler_modules *m)
{
    free(m);
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

static uint64_t module_id(struct sampler_modules *mods, const struct discover_module *m,
                          bool *is_new)
{
    *is_new = false;
    for (unsigned i = 0; i < mods->n; i++) {
        struct known_module *k = &mods->mod[i];
        bool same = m->build_id_len
                        ? (k->build_id_len == m->build_id_len &&
                           !memcmp(k->build_id, m->build_id, m->build_id_len))
                        : (!k->build_id_len && k->header_va == m->header_va &&
                           !strcmp(k->name, m->name));
        if (same)
            return k->id;
    }
    if (mods->n == MOD_MAX)
        return 0;
    struct known_module *k = &mods->mod[mods->n];
    memcpy(k->build_id, m->build_id, sizeof(k->build_id));
    k->build_id_len = m->build_id_len;
    k->header_va = m->header_va;
    memcpy(k->name, m->name, sizeof(k->name));
    k->id = ++mods->n;
    *is_new = true;
    return k->id;
}

static uint64_t map_flags(uint32_t pf)
{
    return ((pf & PF_R) ? HVFXT_MAP_READ : 0) | ((pf & PF_W) ? HVFXT_MAP_WRITE : 0) |
           ((pf & PF_X) ? HVFXT_MAP_EXEC : 0);
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
    uint64_t pid = hvfxt_koid_guest_process(proc);
    for (size_t i = 0; i < n; i++) {
        const struct discover_module *m = &found[i];
        bool is_new;
        uint64_t id = module_id(s->mods, m, &is_new);
        if (id == 0)
            break;
        if (is_new) {
            struct fxt_module fm = {
                .id = id,
                .name = m->name,
                .name_len = (uint16_t)strnlen(m->name, sizeof(m->name)),
                .build_id = m->build_id,
                .build_id_len = (uint16_t)(m->build_id_len > 255 ? 255 : m->build_id_len),
            };
            if (fxt_writer_module(&s->w, &fm, err) < 0)
                return -1;
        }
        for (unsigned j = 0; j < m->nseg; j++) {
            const struct discover_seg *sg = &m->seg[j];
            struct fxt_mapping mp = {
                .pid = pid,
                .module_id = id,
                .start = sg->start,
                .size = sg->size,
                .vaddr = sg->start - m->bias,
                .flags = map_flags(sg->flags),
                .ts = info->first_ts,
            };
            if (fxt_writer_mapping(&s->w, &mp, err) < 0)
                return -1;
        }
    }
    return (int)n;
}
