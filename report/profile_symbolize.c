/* Symbols for a profile's modules and the symbolization of its frames: which symbol source each
 * module uses (symbolize/source.h does the finding, loading and looking up), and the frames'
 * locations and functions interned so that equal ones are one. The model itself is profile.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/profile.h"
#include "report/profile_maps.h"
#include "report/profile_priv.h"
#include "report/runtimes.h"
#include "schema/schema.h"
#include "common/hashidx.h"
#include "symbolize/debuginfod.h"
#include "symbolize/kallsyms.h"

struct prof_index {
    struct hashidx locs; /* key (space, addr, flags & RA) */
};

void prof_symbolize_index_free(struct profile *p)
{
    struct prof_index *ix = p->index;
    if (!ix)
        return;
    hashidx_free(&ix->locs);
    free(ix);
    p->index = NULL;
    prof_funcs_index_free(p);
}

/* ---- symbols ---------------------------------------------------------------------------- */

/* Name a placeholder module ("[elf@0x400000]") after the file its symbols came from. The
 * .build-id/ entries are usually symlinks to the real file, so resolve them first. */
static void rename_from_symbol_file(struct prof_module *m)
{
    if (!hvfxt_module_name_is_placeholder(m->name) || !m->src.file)
        return;
    char *real = realpath(m->src.file, NULL);
    const char *b = prof_base_name(real ? real : m->src.file);
    size_t len = strlen(b);
    if (len > 6 && !strcmp(b + len - 6, ".debug"))
        len -= 6;
    /* A bare .build-id/xx/<hex> name says nothing, nor a debuginfod cache's; keep the
     * placeholder then. */
    if (!strstr(real ? real : m->src.file, "/.build-id/") &&
        !hv_debuginfod_cache_path(real ? real : m->src.file) && len > 0) {
        char *name = strndup(b, len);
        if (name) {
            free(m->name);
            m->name = name;
        }
    }
    free(real);
}

/* Each module's container: that of the first sample in a container with a frame in it (what a
 * container root, --symbols ID=DIR, is tried for without a build-id). NULL when the recording
 * has no containers or no root is given; else an array of group numbers (0: none). */
static uint32_t *module_containers(struct profile *p, const struct symbol_path *sp)
{
    if (!sp->roots.n || !p->groups.n)
        return NULL;
    uint32_t *of = calloc(p->modules.n ? p->modules.n : 1, sizeof(*of));
    if (!of)
        return NULL;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        const struct prof_group *g = profile_sample_group(p, s);
        if (!g || !g->ct.id[0])
            continue;
        for (uint32_t f = 0; f < s->nframes; f++) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            uint32_t map = prof_find_mapping(
                p, (fr->flags & PROF_FRAME_KERNEL) ? PROF_PID_ANY : s->pid, fr->addr);
            uint32_t m = map == PROF_NONE ? PROF_NONE : p->mappings.v[map].module;
            if (m != PROF_NONE && !of[m])
                of[m] = s->group;
        }
    }
    return of;
}

int profile_load_symbols(struct profile *p, struct symbol_path *sp, size_t *loaded,
                         struct hv_err *err)
{
    size_t count = 0;
    uint32_t *ct = module_containers(p, sp);
    for (size_t i = 0; i < p->modules.n; i++) {
        struct prof_module *m = &p->modules.v[i];
        /* A symbol file of the same build wins over the symbols the recording carries (a
         * shared object's exported functions, a kernel's kallsyms): it has them all. */
        if (sym_source_has_file(&m->src) || m->runtime)
            continue;
        const char *container =
            ct && ct[i] ? p->groups.v[ct[i] - 1].ct.id : NULL; /* ct[i]: a group number */
        int rc =
            sym_source_find_in(&m->src, sp, m->build_id, m->build_id_len, m->name, container, err);
        if (rc < 0) {
            free(ct);
            return -1;
        }
        if (rc > 0) {
            rename_from_symbol_file(m);
            count++;
        }
    }
    free(ct);
    if (loaded)
        *loaded = count;
    return 0;
}

int profile_set_kernel_symbols(struct profile *p, const char *path, struct hv_err *err)
{
    int mod = -1;
    for (size_t i = 0; i < p->modules.n; i++) {
        if (p->modules.v[i].kernel) {
            mod = (int)i;
            break;
        }
    }
    struct sym_source src = {0};
    if (sym_source_load_kernel(&src, path, mod >= 0 ? p->modules.v[mod].build_id : NULL,
                               mod >= 0 ? p->modules.v[mod].build_id_len : 0, err) < 0)
        return -1;
    int64_t slide = 0;
    bool have_slide = p->kernel_lstar && kallsyms_kaslr_slide(sym_source_symtab(&src),
                                                              p->kernel_lstar, &slide, NULL) == 0;
    if (mod < 0) {
        mod = profile_add_module(p, src.elf ? prof_base_name(path) : "[kernel.kallsyms]", NULL, 0,
                                 true, err);
        /* No recorded layout: the symbols cover every kernel frame. */
        if (mod < 0 || profile_add_mapping(p, PROF_PID_ANY, 0, UINT64_MAX, (uint64_t)slide, 0,
                                           (uint32_t)mod, err) < 0) {
            sym_source_free(&src);
            return -1;
        }
    } else if (have_slide) {
        for (size_t i = 0; i < p->mappings.n; i++) {
            if (p->mappings.v[i].module == (uint32_t)mod)
                p->mappings.v[i].bias = (uint64_t)slide;
        }
    }
    struct prof_module *m = &p->modules.v[mod];
    sym_source_free(&m->src);
    m->src = src;
    return 0;
}

/* ---- symbolization ---------------------------------------------------------------------- */

struct loc_key {
    const struct profile *p;
    uint64_t space, addr;
    uint32_t ra;
};

static bool loc_eq(const void *ctx, uint32_t idx)
{
    const struct loc_key *k = ctx;
    const struct prof_loc *l = &k->p->locs.v[idx];
    return l->space == k->space && l->addr == k->addr && l->flags == k->ra;
}

/* The location's source line, and its function's source file, from the module's symbol file's
 * DWARF (symbolize/source.h). A line number means a line of the function's file (pprof's Line
 * has no file of its own). */
static void func_file(struct profile *p, uint32_t f, const char *decl_file, uint32_t decl_line,
                      const char *file)
{
    struct prof_func *fn = &p->funcs.v[f];
    if (!fn->file) {
        fn->file = prof_dup_printable(decl_file ? decl_file : file);
        fn->start_line = decl_file ? decl_line : 0;
    }
}

/* Its inlined frames: each a function of the module (interned by name, as a symbol's), on the
 * line the address is on in it. */
static int inlined_frames(struct profile *p, uint32_t module, struct prof_loc *l,
                          const struct src_line *sl, struct hv_err *err)
{
    l->inl_first = (uint32_t)p->inl.n;
    l->ninl = 0;
    for (unsigned k = 0; k < sl->ninl; k++) {
        const struct src_inline *in = &sl->inl[k];
        int f = prof_intern_func(p, in->name, module, err);
        if (f < 0)
            return -1;
        func_file(p, (uint32_t)f, in->decl_file, in->decl_line, in->file);
        if (PROF_VEC_RESERVE(p->inl, err) < 0)
            return -1;
        const struct prof_func *fn = &p->funcs.v[f];
        p->inl.v[p->inl.n++] = (struct prof_inline){
            .func = (uint32_t)f,
            .line = fn->file && in->file && !strcmp(fn->file, in->file) ? in->line : 0};
        l->ninl++;
    }
    return 0;
}

static int source_line(struct profile *p, uint32_t f, uint32_t module, struct prof_loc *l,
                       const struct sym_hit *h, struct hv_err *err)
{
    if (!h->line.file)
        return 0;
    func_file(p, f, h->line.func_file, h->line.func_line, h->line.file);
    struct prof_func *fn = &p->funcs.v[f];
    if (fn->file && !strcmp(fn->file, h->line.file))
        l->line = h->line.line;
    return inlined_frames(p, module, l, &h->line, err);
}

static int resolve_loc(struct profile *p, struct prof_loc *l, struct hv_err *err)
{
    char buf[SYMTAB_MAX_NAME_LEN + 64];
    if (l->flags & PROF_FRAME_RUNTIME) {
        int rc;
        if (prof_runtime_resolve(p, l, &rc, err))
            return rc;
        /* A runtime this report does not read: its code object's address. */
        l->mapping = PROF_NONE;
        l->resolved = false;
        snprintf(buf, sizeof(buf), "[runtime %u code 0x%" PRIx64 "]", PROF_FRAME_RT_ID(l->flags),
                 l->addr);
        int f = prof_intern_func(p, buf, PROF_NONE, err);
        if (f < 0)
            return -1;
        l->func = (uint32_t)f;
        return 0;
    }
    l->mapping = prof_find_mapping(p, l->space, l->addr);
    l->resolved = false;
    l->func_off = 0;
    int f;
    if (l->mapping == PROF_NONE) {
        snprintf(buf, sizeof(buf), "0x%" PRIx64, l->addr);
        f = prof_intern_func(p, buf, PROF_NONE, err);
    } else {
        const struct prof_mapping *mp = &p->mappings.v[l->mapping];
        struct prof_module *mod = &p->modules.v[mp->module];
        uint64_t link = l->addr - mp->bias;
        /* A return address points after the call; the call itself is at ra - 1. */
        uint64_t ra = (l->flags & PROF_FRAME_RA) ? 1 : 0;
        struct sym_hit hit;
        if (sym_source_lookup(&mod->src, link - ra, p->want_lines, &hit)) {
            f = prof_intern_func(p, hit.name, mp->module, err);
            l->func_off = hit.offset + ra;
            l->resolved = true;
            mod->has_functions = true;
            if (f >= 0 && p->want_lines &&
                source_line(p, (uint32_t)f, mp->module, l, &hit, err) < 0)
                return -1;
        } else {
            snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, prof_base_name(mod->name), link);
            f = prof_intern_func(p, buf, mp->module, err);
        }
    }
    if (f < 0)
        return -1;
    l->func = (uint32_t)f;
    return 0;
}

static int ensure_index(struct profile *p, struct hv_err *err)
{
    if (p->index)
        return 0;
    struct prof_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    hashidx_init(&ix->locs);
    p->index = ix;
    return 0;
}

int prof_frame_resolve(struct profile *p, uint64_t pid, struct prof_frame *fr, struct hv_err *err)
{
    if (fr->flags & PROF_FRAME_RT_RAW) { /* not a frame yet: its runtime's merge makes it one */
        fr->loc = PROF_NONE;
        return 0;
    }
    struct prof_index *ix = p->index;
    /* The key: a return address or not, or a runtime frame's whole flags (its runtime and its
     * position). */
    uint32_t kind = (fr->flags & PROF_FRAME_RUNTIME) ? fr->flags : fr->flags & PROF_FRAME_RA;
    struct loc_key k = {p, (fr->flags & PROF_FRAME_KERNEL) ? PROF_PID_ANY : pid, fr->addr, kind};
    uint64_t h = hashidx_u64(hashidx_u64(hashidx_u64(HASHIDX_SEED, k.space), k.addr), k.ra);
    uint32_t l = hashidx_find(&ix->locs, h, loc_eq, &k);
    if (l == HASHIDX_NONE) {
        if (PROF_VEC_RESERVE(p->locs, err) < 0)
            return -1;
        struct prof_loc *loc = &p->locs.v[p->locs.n];
        *loc = (struct prof_loc){.space = k.space, .addr = k.addr, .flags = k.ra};
        if (resolve_loc(p, loc, err) < 0)
            return -1;
        l = (uint32_t)p->locs.n++;
        if (hashidx_insert(&ix->locs, h, l) < 0)
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    }
    fr->loc = l;
    return 0;
}

int profile_symbolize(struct profile *p, void (*progress)(void *ctx, size_t done, size_t total),
                      void *ctx, struct hv_err *err)
{
    /* Start over so that symbols loaded since the last call are used. */
    prof_symbolize_index_free(p);
    for (size_t i = 0; i < p->funcs.n; i++) {
        free(p->funcs.v[i].name);
        free(p->funcs.v[i].file);
    }
    p->funcs.n = 0;
    p->locs.n = 0;
    p->inl.n = 0;
    if (ensure_index(p, err) < 0)
        return -1;
    for (size_t s = 0; s < p->samples.n; s++) {
        const struct prof_sample *sm = &p->samples.v[s];
        if (progress && s % 4096 == 0)
            progress(ctx, s, p->samples.n);
        for (uint32_t i = 0; i < sm->nframes; i++)
            if (prof_frame_resolve(p, sm->pid, &p->frames.v[sm->first + i], err) < 0)
                return -1;
    }
    /* Then each runtime's frames take the place of its interpreter's (runtime/runtime.h: the
     * report halves), and are resolved by their runtime. */
    if (prof_runtimes_merge(p, err) < 0)
        return -1;
    for (size_t s = 0; s < p->samples.n; s++) {
        const struct prof_sample *sm = &p->samples.v[s];
        for (uint32_t i = 0; i < sm->nframes; i++) {
            struct prof_frame *fr = &p->frames.v[sm->first + i];
            if ((fr->flags & PROF_FRAME_RUNTIME) && fr->loc == PROF_NONE &&
                prof_frame_resolve(p, sm->pid, fr, err) < 0)
                return -1;
        }
    }
    if (progress)
        progress(ctx, p->samples.n, p->samples.n);
    profile_name_processes_from_modules(p);
    return 0;
}
