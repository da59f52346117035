#include "report/profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/files.h"
#include "report/profile_maps.h"
#include "schema/schema.h"
#include "symbolize/hashidx.h"
#include "symbolize/kallsyms.h"

struct prof_index {
    struct hashidx locs;  /* key (space, addr, flags & RA) */
    struct hashidx funcs; /* key (name, module) */
};

/* Room for one more element of a profile vector, or -1 with the message. */
#define VEC_RESERVE(vec, err)                                                                      \
    (vec_reserve(&(vec), 1) ? 0 : hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory"))

void profile_init(struct profile *p)
{
    memset(p, 0, sizeof(*p));
    p->ticks_per_sec = 1000000000ull;
}

static void drop_index(struct profile *p)
{
    struct prof_index *ix = p->index;
    if (!ix)
        return;
    hashidx_free(&ix->locs);
    hashidx_free(&ix->funcs);
    free(ix);
    p->index = NULL;
}

void profile_free(struct profile *p)
{
    for (size_t i = 0; i < p->modules.n; i++) {
        sym_source_free(&p->modules.v[i].src);
        free(p->modules.v[i].name);
    }
    for (size_t i = 0; i < p->names.n; i++)
        free(p->names.v[i].name);
    for (size_t i = 0; i < p->funcs.n; i++) {
        free(p->funcs.v[i].name);
        free(p->funcs.v[i].file);
    }
    free(p->samples.v);
    free(p->frames.v);
    free(p->modules.v);
    free(p->mappings.v);
    free(p->names.v);
    if (p->name_index) {
        hashidx_free(p->name_index);
        free(p->name_index);
    }
    free(p->locs.v);
    free(p->funcs.v);
    drop_index(p);
    prof_maps_index_free(p);
    memset(p, 0, sizeof(*p));
}

static int add_frames(struct profile *p, const uint64_t *addrs, const uint32_t *flags, uint32_t n,
                      uint32_t default_flags_first, uint32_t default_flags_rest, struct hv_err *err)
{
    if (p->frames.n + n > UINT32_MAX - 1)
        return hv_errk(err, HV_ERR_LIMIT, "profile: too many frames");
    for (uint32_t i = 0; i < n; i++) {
        if (VEC_RESERVE(p->frames, err) < 0)
            return -1;
        uint32_t fl = flags ? flags[i] : i == 0 ? default_flags_first : default_flags_rest;
        p->frames.v[p->frames.n++] = (struct prof_frame){addrs[i], PROF_NONE, fl};
    }
    return 0;
}

int profile_add_sample(struct profile *p, uint64_t ts, uint32_t vcpu, uint64_t pid, uint64_t tid,
                       uint8_t cpl, const uint64_t *addrs, const uint32_t *flags, uint32_t n,
                       uint64_t weight, struct hv_err *err)
{
    if (p->samples.n >= UINT32_MAX - 1)
        return hv_errk(err, HV_ERR_LIMIT, "profile: too many samples");
    if (VEC_RESERVE(p->samples, err) < 0)
        return -1;
    uint32_t k = cpl == PROF_CPL_KERNEL ? PROF_FRAME_KERNEL : 0;
    uint32_t first = (uint32_t)p->frames.n;
    if (add_frames(p, addrs, flags, n, k, k | PROF_FRAME_RA, err) < 0)
        return -1;
    p->samples.v[p->samples.n] = (struct prof_sample){.ts = ts,
                                                      .pid = pid,
                                                      .tid = tid,
                                                      .weight = weight,
                                                      .vcpu = vcpu,
                                                      .cpl = cpl,
                                                      .first = first,
                                                      .nframes = n};
    return (int)p->samples.n++;
}

int profile_append_frames(struct profile *p, uint32_t s, const uint64_t *addrs,
                          const uint32_t *flags, uint32_t n, struct hv_err *err)
{
    if (s >= p->samples.n)
        return hv_errf(err, "profile: no sample %u", s);
    struct prof_sample *sm = &p->samples.v[s];
    if (sm->first + sm->nframes != p->frames.n)
        return hv_errf(err, "profile: frames can only be appended to the newest sample");
    if (add_frames(p, addrs, flags, n, PROF_FRAME_RA, PROF_FRAME_RA, err) < 0)
        return -1;
    p->samples.v[s].nframes += n;
    return 0;
}

/* A copy of a name from a recording or a symbol file with its control characters (C0, DEL)
 * shown as '?': a hostile guest's names must not drive the terminal a report is printed on. */
static char *dup_printable(const char *name)
{
    char *c = strdup(name);
    for (char *q = c; q && *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            *q = '?';
    return c;
}

struct module_key {
    const struct profile *p;
    const char *name;
    const uint8_t *build_id;
    uint32_t build_id_len;
    bool kernel;
};

static bool module_eq(const void *ctx, uint32_t idx)
{
    const struct module_key *k = ctx;
    const struct prof_module *m = &k->p->modules.v[idx];
    bool same = k->build_id_len ? m->build_id_len == k->build_id_len &&
                                      !memcmp(m->build_id, k->build_id, k->build_id_len)
                                : !m->build_id_len && !strcmp(m->name, k->name);
    return same && m->kernel == k->kernel;
}

int profile_add_module(struct profile *p, const char *name, const uint8_t *build_id,
                       uint32_t build_id_len, bool kernel, struct hv_err *err)
{
    if (build_id_len > ELF_BUILD_ID_MAX)
        build_id_len = ELF_BUILD_ID_MAX;
    if (!name || !*name)
        name = kernel ? "[kernel]" : "[unknown]";
    struct prof_maps_index *x = prof_maps_index(p);
    if (!x)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    /* By key in a hash (a recording may name 10^5 modules: no scan per record). The name key
     * is the name as given; a module found by build-id keeps its first name. */
    struct module_key k = {p, name, build_id, build_id_len, kernel};
    uint64_t h = prof_module_hash(name, build_id, build_id_len, kernel);
    uint32_t found = hashidx_find(&x->mods, h, module_eq, &k);
    if (found != HASHIDX_NONE)
        return (int)found;
    if (VEC_RESERVE(p->modules, err) < 0)
        return -1;
    struct prof_module *m = &p->modules.v[p->modules.n];
    memset(m, 0, sizeof(*m));
    if (!(m->name = dup_printable(name)))
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    if (build_id_len)
        memcpy(m->build_id, build_id, build_id_len);
    m->build_id_len = build_id_len;
    m->kernel = kernel;
    if (hashidx_insert(&x->mods, h, (uint32_t)p->modules.n) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    return (int)p->modules.n++;
}

struct mapping_key {
    const struct profile *p;
    uint64_t pid, start, size;
    uint32_t module;
};

static bool mapping_eq(const void *ctx, uint32_t idx)
{
    const struct mapping_key *k = ctx;
    const struct prof_mapping *m = &k->p->mappings.v[idx];
    return m->pid == k->pid && m->start == k->start && m->size == k->size && m->module == k->module;
}

int profile_add_mapping(struct profile *p, uint64_t pid, uint64_t start, uint64_t size,
                        uint64_t bias, uint64_t file_offset, uint32_t module, struct hv_err *err)
{
    if (module >= p->modules.n)
        return hv_errf(err, "profile: mapping names unknown module %u", module);
    if (size == 0)
        return hv_errf(err, "profile: empty mapping at 0x%" PRIx64, start);
    struct prof_maps_index *x = prof_maps_index(p);
    if (!x)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    struct mapping_key k = {p, pid, start, size, module};
    uint64_t h = prof_mapping_hash(pid, start, size, module);
    uint32_t found = hashidx_find(&x->maps, h, mapping_eq, &k);
    if (found != HASHIDX_NONE)
        return (int)found; /* re-announced (e.g. discovery at every snapshot) */
    if (VEC_RESERVE(p->mappings, err) < 0)
        return -1;
    p->mappings.v[p->mappings.n] =
        (struct prof_mapping){pid, start, size, bias, file_offset, module, false};
    if (hashidx_insert(&x->maps, h, (uint32_t)p->mappings.n) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    return (int)p->mappings.n++;
}

struct name_key {
    const struct profile *p;
    uint64_t pid, tid;
};

static bool name_eq(const void *ctx, uint32_t idx)
{
    const struct name_key *k = ctx;
    return k->p->names.v[idx].pid == k->pid && k->p->names.v[idx].tid == k->tid;
}

static uint64_t name_hash(uint64_t pid, uint64_t tid)
{
    return hashidx_u64(hashidx_u64(HASHIDX_SEED, pid), tid);
}

static struct prof_name *find_name(const struct profile *p, uint64_t pid, uint64_t tid)
{
    if (!p->name_index)
        return NULL;
    struct name_key k = {p, pid, tid};
    uint32_t i = hashidx_find(p->name_index, name_hash(pid, tid), name_eq, &k);
    return i == HASHIDX_NONE ? NULL : &p->names.v[i];
}

int profile_set_name(struct profile *p, uint64_t pid, uint64_t tid, const char *name,
                     int64_t guest_id, struct hv_err *err)
{
    if (!p->name_index) {
        p->name_index = calloc(1, sizeof(struct hashidx));
        if (!p->name_index)
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
        hashidx_init(p->name_index);
    }
    char *copy = dup_printable(name ? name : "");
    if (!copy)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    if (guest_id >= 0)
        p->guest_ids = true;
    struct prof_name *n = find_name(p, pid, tid);
    if (n) {
        free(n->name);
        n->name = copy;
        if (guest_id >= 0)
            n->guest_id = guest_id;
        return 0;
    }
    if (VEC_RESERVE(p->names, err) < 0 ||
        hashidx_insert(p->name_index, name_hash(pid, tid), (uint32_t)p->names.n) < 0) {
        free(copy);
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    }
    p->names.v[p->names.n++] = (struct prof_name){pid, tid, copy, guest_id, 0};
    return 0;
}

const char *profile_process_name(const struct profile *p, uint64_t pid)
{
    const struct prof_name *n = find_name(p, pid, 0);
    return n && n->name[0] ? n->name : "[unknown]";
}

const char *profile_thread_name(const struct profile *p, uint64_t pid, uint64_t tid)
{
    const struct prof_name *n = find_name(p, pid, tid);
    return n && n->name[0] ? n->name : profile_process_name(p, pid);
}

/* Without the guest's own ids (a guest whose OS hvprof does not read), the recording's
 * address-space and thread numbers: koid minus its base (docs/fxt-samples.md section 4), which
 * `--pid` and `--tid` take back. With them, an unlabelled one keeps its koid, so that it cannot
 * be taken for a guest pid. */
uint64_t profile_shown_pid(const struct profile *p, uint64_t pid)
{
    const struct prof_name *n = find_name(p, pid, 0);
    if (n && n->guest_id >= 0)
        return (uint64_t)n->guest_id;
    return !p->guest_ids && pid >= HVFXT_KOID_PROCESS_BASE && pid < HVFXT_KOID_THREAD_BASE
               ? pid - HVFXT_KOID_PROCESS_BASE
               : pid;
}

uint64_t profile_shown_tid(const struct profile *p, uint64_t pid, uint64_t tid)
{
    const struct prof_name *n = find_name(p, pid, tid);
    if (n && n->guest_id >= 0)
        return (uint64_t)n->guest_id;
    return !p->guest_ids && tid >= HVFXT_KOID_THREAD_BASE ? tid - HVFXT_KOID_THREAD_BASE : tid;
}

static int by_guest_process(const void *a, const void *b)
{
    const struct prof_name *x = *(const struct prof_name *const *)a,
                           *y = *(const struct prof_name *const *)b;
    if (x->guest_id != y->guest_id)
        return x->guest_id < y->guest_id ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int profile_link_processes(struct profile *p, struct hv_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < p->names.n; i++)
        n += p->names.v[i].tid == 0 && p->names.v[i].guest_id >= 0;
    if (n < 2)
        return 0;
    struct prof_name **v = malloc(n * sizeof(*v));
    if (!v)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    n = 0;
    for (size_t i = 0; i < p->names.n; i++)
        if (p->names.v[i].tid == 0 && p->names.v[i].guest_id >= 0)
            v[n++] = &p->names.v[i];
    qsort(v, n, sizeof(*v), by_guest_process);
    for (size_t i = 1; i < n; i++)
        if (v[i]->guest_id == v[i - 1]->guest_id && !strcmp(v[i]->name, v[i - 1]->name))
            v[i]->row = v[i - 1]->row ? v[i - 1]->row : v[i - 1]->pid;
    free(v);
    return 0;
}

uint64_t profile_process_row(const struct profile *p, uint64_t pid)
{
    const struct prof_name *n = find_name(p, pid, 0);
    return n && n->row ? n->row : pid;
}

static const char *base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash && slash[1] ? slash + 1 : s;
}

const char *profile_module_basename(const struct profile *p, uint32_t module)
{
    if (module >= p->modules.n)
        return "[unknown]";
    return base_name(p->modules.v[module].name);
}

uint64_t profile_total_weight(const struct profile *p)
{
    uint64_t t = 0;
    for (size_t i = 0; i < p->samples.n; i++)
        t += p->samples.v[i].weight;
    return t;
}

/* ---- symbols ---------------------------------------------------------------------------- */

/* Name a placeholder module ("[elf@0x400000]") after the file its symbols came from. The
 * .build-id/ entries are usually symlinks to the real file, so resolve them first. */
static void rename_from_symbol_file(struct prof_module *m)
{
    if (!hvfxt_module_name_is_placeholder(m->name) || !m->src.file)
        return;
    char *real = realpath(m->src.file, NULL);
    const char *b = base_name(real ? real : m->src.file);
    size_t len = strlen(b);
    if (len > 6 && !strcmp(b + len - 6, ".debug"))
        len -= 6;
    /* A bare .build-id/xx/<hex> name says nothing; keep the placeholder then. */
    if (!strstr(real ? real : m->src.file, "/.build-id/") && len > 0) {
        char *name = strndup(b, len);
        if (name) {
            free(m->name);
            m->name = name;
        }
    }
    free(real);
}

int profile_load_symbols(struct profile *p, struct symbol_path *sp, size_t *loaded,
                         struct hv_err *err)
{
    size_t count = 0;
    for (size_t i = 0; i < p->modules.n; i++) {
        struct prof_module *m = &p->modules.v[i];
        /* A symbol file of the same build wins over the symbols the recording carries (a
         * shared object's exported functions, a kernel's kallsyms): it has them all. */
        if (sym_source_has_file(&m->src))
            continue;
        int rc = sym_source_find(&m->src, sp, m->build_id, m->build_id_len, m->name, err);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            rename_from_symbol_file(m);
            count++;
        }
    }
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
        mod = profile_add_module(p, src.elf ? base_name(path) : "[kernel.kallsyms]", NULL, 0, true,
                                 err);
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
    return l->space == k->space && l->addr == k->addr && (l->flags & PROF_FRAME_RA) == k->ra;
}

struct func_key {
    const struct profile *p;
    const char *name;
    uint32_t module;
};

static bool func_eq(const void *ctx, uint32_t idx)
{
    const struct func_key *k = ctx;
    const struct prof_func *f = &k->p->funcs.v[idx];
    return f->module == k->module && !strcmp(f->name, k->name);
}

static int intern_func(struct profile *p, const char *name, uint32_t module, struct hv_err *err)
{
    struct prof_index *ix = p->index;
    char *copy = dup_printable(name); /* the key too: equal names stay one function */
    if (!copy)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    struct func_key k = {p, copy, module};
    uint64_t h = hashidx_u64(hashidx_bytes(HASHIDX_SEED, copy, strlen(copy)), module);
    uint32_t f = hashidx_find(&ix->funcs, h, func_eq, &k);
    if (f != HASHIDX_NONE) {
        free(copy);
        return (int)f;
    }
    if (VEC_RESERVE(p->funcs, err) < 0) {
        free(copy);
        return -1;
    }
    p->funcs.v[p->funcs.n] = (struct prof_func){.name = copy, .module = module};
    if (hashidx_insert(&ix->funcs, h, (uint32_t)p->funcs.n) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    return (int)p->funcs.n++;
}

/* The location's source line, and its function's source file, from the module's symbol file's
 * DWARF (symbolize/source.h). A line number means a line of the function's file (pprof's Line
 * has no file of its own). */
static void source_line(struct profile *p, uint32_t f, struct prof_loc *l, const struct sym_hit *h)
{
    if (!h->line.file)
        return;
    struct prof_func *fn = &p->funcs.v[f];
    if (!fn->file) {
        fn->file = dup_printable(h->line.func_file ? h->line.func_file : h->line.file);
        fn->start_line = h->line.func_file ? h->line.func_line : 0;
    }
    if (fn->file && !strcmp(fn->file, h->line.file))
        l->line = h->line.line;
}

static int resolve_loc(struct profile *p, struct prof_loc *l, struct hv_err *err)
{
    char buf[SYMTAB_MAX_NAME_LEN + 64];
    l->mapping = prof_find_mapping(p, l->space, l->addr);
    l->resolved = false;
    l->func_off = 0;
    int f;
    if (l->mapping == PROF_NONE) {
        snprintf(buf, sizeof(buf), "0x%" PRIx64, l->addr);
        f = intern_func(p, buf, PROF_NONE, err);
    } else {
        const struct prof_mapping *mp = &p->mappings.v[l->mapping];
        struct prof_module *mod = &p->modules.v[mp->module];
        uint64_t link = l->addr - mp->bias;
        /* A return address points after the call; the call itself is at ra - 1. */
        uint64_t ra = (l->flags & PROF_FRAME_RA) ? 1 : 0;
        struct sym_hit hit;
        if (sym_source_lookup(&mod->src, link - ra, p->want_lines, &hit)) {
            f = intern_func(p, hit.name, mp->module, err);
            l->func_off = hit.offset + ra;
            l->resolved = true;
            mod->has_functions = true;
            if (f >= 0 && p->want_lines)
                source_line(p, (uint32_t)f, l, &hit);
        } else {
            snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(mod->name), link);
            f = intern_func(p, buf, mp->module, err);
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
    hashidx_init(&ix->funcs);
    p->index = ix;
    return 0;
}

int profile_symbolize(struct profile *p, void (*progress)(void *ctx, size_t done, size_t total),
                      void *ctx, struct hv_err *err)
{
    /* Start over so that symbols loaded since the last call are used. */
    drop_index(p);
    for (size_t i = 0; i < p->funcs.n; i++) {
        free(p->funcs.v[i].name);
        free(p->funcs.v[i].file);
    }
    p->funcs.n = 0;
    p->locs.n = 0;
    if (ensure_index(p, err) < 0)
        return -1;
    struct prof_index *ix = p->index;
    for (size_t s = 0; s < p->samples.n; s++) {
        const struct prof_sample *sm = &p->samples.v[s];
        if (progress && s % 4096 == 0)
            progress(ctx, s, p->samples.n);
        for (uint32_t i = 0; i < sm->nframes; i++) {
            struct prof_frame *fr = &p->frames.v[sm->first + i];
            struct loc_key k = {p, (fr->flags & PROF_FRAME_KERNEL) ? PROF_PID_ANY : sm->pid,
                                fr->addr, fr->flags & PROF_FRAME_RA};
            uint64_t h = hashidx_u64(hashidx_u64(hashidx_u64(HASHIDX_SEED, k.space), k.addr), k.ra);
            uint32_t l = hashidx_find(&ix->locs, h, loc_eq, &k);
            if (l == HASHIDX_NONE) {
                if (VEC_RESERVE(p->locs, err) < 0)
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
        }
    }
    if (progress)
        progress(ctx, p->samples.n, p->samples.n);
    profile_name_processes_from_modules(p);
    return 0;
}

/* The recorder names address spaces it knows nothing about "as<n> cr3=0x..." (sampler/); a main
 * module is a better name than that. */
static bool synthetic_process_name(const char *name)
{
    unsigned n;
    char c;
    return sscanf(name, "as%u cr3=0x%c", &n, &c) == 2;
}

void profile_name_processes_from_modules(struct profile *p)
{
    for (size_t s = 0; s < p->samples.n; s++) {
        uint64_t pid = p->samples.v[s].pid;
        const struct prof_name *known = find_name(p, pid, 0);
        if (known && !synthetic_process_name(known->name))
            continue;
        const struct prof_mapping *best = NULL;
        size_t nm;
        const uint32_t *ids = prof_mappings_of(p, pid, &nm); /* in order of start */
        for (size_t i = 0; i < nm && !best; i++)
            if (!p->modules.v[p->mappings.v[ids[i]].module].kernel)
                best = &p->mappings.v[ids[i]];
        char buf[64];
        const char *name = buf;
        if (known && (!best || hvfxt_module_name_is_placeholder(p->modules.v[best->module].name)))
            continue; /* the recorded name, synthetic or not, beats a placeholder */
        if (best)
            name = base_name(p->modules.v[best->module].name);
        else if (p->samples.v[s].cpl == PROF_CPL_KERNEL && pid == 0)
            name = "[kernel]";
        else
            snprintf(buf, sizeof(buf), "pid %" PRIu64, profile_shown_pid(p, pid));
        if (profile_set_name(p, pid, 0, name, -1, NULL) < 0)
            return;
    }
}

static bool comm_matches(const struct profile *p, const struct prof_sample *s, const char *comm)
{
    return !strcmp(profile_thread_name(p, s->pid, s->tid), comm) ||
           !strcmp(profile_process_name(p, s->pid), comm);
}

void profile_filter(struct profile *p, const struct prof_filter *f)
{
    /* --comm matches the names the report prints: a process the recorder only knew by its
     * address space is named after its program before the filter, not after it. */
    if (f->comm)
        profile_name_processes_from_modules(p);
    uint64_t want_pid = f->pid, want_tid = f->tid;
    /* The window in ticks. */
    uint64_t origin = 0, lo = 0, hi = UINT64_MAX;
    if (f->has_time && !f->time_absolute) {
        origin = p->start_ts;
        for (size_t r = 0; !origin && r < p->samples.n; r++)
            origin = p->samples.v[r].ts; /* no marker: the first sample */
    }
    double tps = p->ticks_per_sec ? (double)p->ticks_per_sec : 1e9;
    if (f->has_time && f->time_from >= 0)
        lo = origin + (uint64_t)(f->time_from * tps);
    if (f->has_time && f->time_to >= 0)
        hi = origin + (uint64_t)(f->time_to * tps);
    if (!p->guest_ids && want_pid < HVFXT_KOID_PROCESS_BASE)
        want_pid += HVFXT_KOID_PROCESS_BASE;
    if (!p->guest_ids && want_tid < HVFXT_KOID_THREAD_BASE)
        want_tid += HVFXT_KOID_THREAD_BASE;
    size_t w = 0;
    for (size_t r = 0; r < p->samples.n; r++) {
        const struct prof_sample *s = &p->samples.v[r];
        if ((f->has_vcpu && s->vcpu != f->vcpu) ||
            (f->has_pid && s->pid != want_pid && profile_shown_pid(p, s->pid) != want_pid) ||
            (f->has_tid && s->tid != want_tid &&
             profile_shown_tid(p, s->pid, s->tid) != want_tid) ||
            (f->comm && !comm_matches(p, s, f->comm)) ||
            (f->user_only && s->cpl == PROF_CPL_KERNEL) ||
            (f->kernel_only && s->cpl != PROF_CPL_KERNEL) || s->ts < lo || s->ts >= hi)
            continue;
        p->samples.v[w++] = *s;
    }
    p->samples.n = w;
}
