/* Module discovery for guest address spaces, on the drain thread: the OS layer finds the ELF
 * images of an address space (guestos/), and the result goes into the trace as module and
 * mapping records (module_registry.c), with the symbols each image carries in the guest's
 * memory (its dynamic symbol table), so `hvprof report` names shared-library functions without
 * any file and symbolizes the rest later from symbol files.
 *
 * A process is looked at when it is first seen, and again while it keeps running user code:
 * right after exec the loader has not mapped the libraries yet, pages of an image are mapped
 * only once touched, and dlopen() adds code later. The next look comes MOD_LOOK_MIN_NS after
 * one that found something new, doubling up to MOD_LOOK_MAX_NS while nothing changes; a
 * process not sampled in user mode since its last look is not looked at again.
 *
 * This reads guest memory while the guest runs: page tables may change under us, so everything
 * is bounded and validated (as on the exit path), and a process found mid-change simply yields
 * fewer modules until its next look. */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/module_registry.h"
#include "sampler/sampler_priv.h"
#include "sampler/symbol_batch.h"

#define MOD_MAX_PER_PROC    64            /* modules kept per address space */
#define MOD_LOOK_MIN_NS     100000000ull  /* 0.1 s */
#define MOD_LOOK_MAX_NS     2000000000ull /* 2 s */
#define MOD_LOOKS_PER_DRAIN 8 /* re-looks per drain pass (10 ms): bounds the drain's latency */
#define MOD_SYMBOL_LOOKS    4 /* looks for a module's symbols before giving up on them */
/* Looks taken early because samples ran code no look had found, in a row that found nothing:
 * past this (JIT code, a module without tables) the ordinary schedule applies again. */
#define MOD_UNKNOWN_LOOKS 8

struct proc_look {
    uint64_t at;        /* time the last look ended (0: none yet) */
    uint64_t began;     /* time it began */
    uint64_t wait;      /* until the next */
    unsigned fruitless; /* early looks for unknown code in a row that found nothing */
};

/* Modules and mappings already written (sampler/module_registry.h dedupes by build-id). */
struct sampler_modules {
    struct discover_registry reg;
    struct proc_look look[ID_MAX_PROCS];
    uint32_t cursor; /* where the last pass of re-looks stopped */
    uint64_t began;  /* when the look under way (or the last one) began */
    uint64_t looks, relooks_found, symbols, symbol_modules, ns;
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

void sampler_modules_budget(struct sampler_modules *m, struct meta_budget *b)
{
    m->reg.budget = b;
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
    return discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(0), &m, 1, s->start_ns,
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
    int64_t id = sampler_modules_record_kernel(s, &m, s->start_ns, err);
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

int64_t sampler_modules_record_kernel(struct sampler *s, const struct discover_module *m,
                                      uint64_t ts, struct hv_err *err)
{
    if (discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(0), m, 1, ts, err) < 0)
        return -1;
    int64_t id =
        discover_registry_id(&s->mods->reg, m->build_id, m->build_id_len, m->name, m->header_va);
    return id >= 0 ? id : -2; /* no room left in the metadata budget: counted there */
}

/* The symbols a module carries in the guest's memory, once per module (retried at a few looks:
 * its table's pages may not be mapped yet). */
static int record_symbols(struct sampler *s, const struct guestos_as *as,
                          const struct discover_module *m, struct hv_err *err)
{
    struct discover_registry_module *r = discover_registry_find(&s->mods->reg, m);
    if (!r || r->symbols_recorded || r->symbol_looks >= MOD_SYMBOL_LOOKS)
        return 0;
    r->symbol_looks++;
    /* One module's table takes at most a quarter of the budget, so one forged image cannot
     * leave the others without names (a large real one, libLLVM's, needs ~8 MiB). */
    uint64_t left = meta_budget_table_left(&s->meta, 4);
    if (left < META_SYMBOL_COST(0)) {
        r->symbols_recorded = true; /* no room: not looked for again */
        s->meta.cut_symbol_tables++;
        return 0;
    }
    struct symbol_batch b = {.max_bytes = left};
    /* Its file's .symtab (on a disk hvprof serves, or in the guest's page cache) has every
     * function, static ones too, once; else what the guest's memory shows (its .dynsym). What
     * was read stands in the batch (a table cut at its share is written as far as it got). */
    bool from_file = false;
    if (!r->file_symbols_tried) {
        r->file_symbols_tried = true;
        (void)sampler_module_note(s, m); /* every module gets its line, named or not */
        from_file = sampler_module_symbols(s, as, m, symbol_batch_add, &b);
    }
    if (!from_file && guestos_module_symbols(&s->os, s->mem, as, m, symbol_batch_add, &b) > 0) {
        struct module_note *n = sampler_module_note(s, m);
        if (n && !n->syms_from)
            n->syms_from = FROM_MEMORY;
    }
    int rc = 0;
    if (b.n && !b.oom) {
        rc = symbol_batch_write(&b, &s->w, r->id, 0, err);
        r->symbols_recorded = true;
        s->mods->symbols += b.n;
        s->mods->symbol_modules++;
        if (b.cut)
            s->meta.cut_symbol_tables++;
    }
    symbol_batch_free(&b);
    return rc;
}

/* Look at process `proc`'s address space; returns the records written (new modules and
 * mappings), or -1. */
static int look(struct sampler *s, uint32_t proc, const struct id_proc *p, uint64_t ts,
                struct hv_err *err)
{
    const struct id_proc_info *info = &p->info;
    struct id_label_value v;
    int32_t pid = id_label_get(&p->label, &v) && v.guest_id > 0 ? v.guest_id : -1;
    struct discover_module *found = malloc(MOD_MAX_PER_PROC * sizeof(*found));
    if (!found)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    uint64_t t0 = hv_now_ns();
    s->mods->began = t0;
    struct guestos_as as = {info->cr0, info->cr3, info->cr4, info->efer, pid};
    size_t n = guestos_discover_modules(&s->os, s->mem, &as, found, MOD_MAX_PER_PROC);
    int written =
        discover_record(&s->w, &s->mods->reg, hvfxt_koid_guest_process(proc), found, n, ts, err);
    for (size_t i = 0; i < n && written >= 0; i++)
        if (record_symbols(s, &as, &found[i], err) < 0)
            written = -1;
    if (written >= 0) {
        sampler_cfi_update(s, proc, &as, found, n);
        sampler_python_update(s, proc, &as, found, n);
    }
    free(found);
    s->mods->looks++;
    s->mods->ns += hv_now_ns() - t0;
    return written;
}

int sampler_modules_discover(struct sampler *s, uint32_t proc, const struct id_proc *p,
                             struct hv_err *err)
{
    if (look(s, proc, p, p->info.first_ts, err) < 0)
        return -1;
    s->mods->look[proc - 1] = (struct proc_look){hv_now_ns(), s->mods->began, MOD_LOOK_MIN_NS, 0};
    return 0;
}

uint64_t sampler_modules_looked(const struct sampler *s, uint32_t proc)
{
    return proc && proc <= ID_MAX_PROCS && s->mods ? s->mods->look[proc - 1].began : 0;
}

int sampler_modules_poll(struct sampler *s, uint64_t now, struct hv_err *err)
{
    struct sampler_modules *mods = s->mods;
    unsigned done = 0;
    for (uint32_t k = 0;
         k < ID_MAX_PROCS && done < MOD_LOOKS_PER_DRAIN && sampler_drain_may_work(s); k++) {
        uint32_t id = (mods->cursor + k) % ID_MAX_PROCS + 1;
        struct proc_look *l = &mods->look[id - 1];
        const struct id_proc *p = id_proc_at(s->core.ids, id);
        if (!l->at || !p || !p->info.cr3)
            continue;
        /* Samples in code no look had found (an executable whose code starts after a long
         * loader phase, whose looks doubled their wait): look again soon, not at the doubled
         * wait; unless such looks keep finding nothing. */
        uint64_t unknown = atomic_load_explicit(&p->unknown_code_ts, memory_order_relaxed);
        bool early =
            unknown > l->at && l->fruitless < MOD_UNKNOWN_LOOKS && now >= l->at + MOD_LOOK_MIN_NS;
        if (!early && now < l->at + l->wait)
            continue;
        uint64_t seen = atomic_load_explicit(&p->last_user_ts, memory_order_relaxed);
        if (seen < l->at)
            continue; /* no user code run since: nothing new to find */
        int written = look(s, id, p, now, err);
        if (written < 0)
            return -1;
        if (written > 0)
            mods->relooks_found++;
        l->at = hv_now_ns();
        l->began = mods->began;
        l->wait = written > 0 ? MOD_LOOK_MIN_NS
                              : (l->wait * 2 > MOD_LOOK_MAX_NS ? MOD_LOOK_MAX_NS : l->wait * 2);
        l->fruitless = written > 0 ? 0 : l->fruitless + 1;
        mods->cursor = id % ID_MAX_PROCS;
        done++;
    }
    return 0;
}

void sampler_modules_summary(const struct sampler *s, FILE *out)
{
    const struct sampler_modules *m = s->mods;
    if (!m->looks)
        return;
    fprintf(out,
            "  user modules: %zu recorded (%zu mappings), %" PRIu64 " with %" PRIu64
            " symbols from their dynamic symbol tables; %" PRIu64 " looks at address spaces "
            "(%" PRIu64 " found more than the look before), %.1f ms in all\n",
            m->reg.mods.n, m->reg.maps.n, m->symbol_modules, m->symbols, m->looks, m->relooks_found,
            (double)m->ns / 1e6);
}
