/* DWARF call-frame information of the guest's user modules, for the exit path's user walks
 * (docs/cfi.md). On the drain thread, after each look at a process's address space
 * (sampler/sources/user_modules/): every module with a PT_GNU_EH_FRAME gets its table compiled once
 * per build-id from the guest's memory (guestwalk/cfi.h: its .eh_frame_hdr and .eh_frame, read page
 * by page; a page the process does not map comes from the module's file, on a disk hvprof serves or
 * in the guest kernel's page cache (module_files.h); pages found nowhere are holes, and the module
 * is compiled again at a later look while any FDE was missing, up to CFI_LOOKS times); then the
 * process's map of modules with tables (guestwalk/cfi_unwind.h) is published to the exit path,
 * which loads it with acquire before a user walk of that process. Tables and maps are immutable
 * once published. A table (one per binary) is kept until the recording closes; a map replaced
 * by a newer one, or whose process ended, is retired (rec_retire: freed once no vCPU can still
 * walk with it), so the maps kept are the live processes' (docs/identities.md). The recorder
 * source "cfi": it hands the exit core its maps at create (exit_core.cfi). */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestwalk/cfi_unwind.h"
#include "sampler/parts/cfi_file.h"
#include "sampler/parts/module_files.h"
#include "common/clock.h"
#include "guestos/guestos.h"
#include "sampler/exit/core.h"
#include "sampler/source/source.h"

#define CFI_LOOKS      4             /* compilations of a module while FDEs are missing */
#define CFI_MAX_TABLES 4096          /* distinct binaries */
#define CFI_READ_MAX   (64ull << 20) /* bytes of a module's tables read from the guest */
/* Compiled tables kept in all: glibc's is ~0.3 MiB, a 100 MB binary's ~25 MiB. Past it no table
 * is compiled (frame pointers for the rest): thousands of forged binaries with 64 MiB of tables
 * each cannot take the host's memory (docs/reliability.md, "Budgets"). */
#define CFI_KEEP_MAX (192ull << 20)

struct cfi_entry {
    uint8_t build_id[64];
    uint32_t build_id_len;
    const struct cfi_table *t; /* current, NULL if it could not be compiled */
    unsigned looks;
    bool complete;   /* compiled with no FDE missing, or given up */
    bool file_tried; /* looked for its file (record --symbols) */
    bool disk_tried; /* looked for it on the disks */
};

struct cfi {
    VECTOR(struct cfi_entry) e;
    VECTOR(struct cfi_table *) tables; /* every table compiled, freed at close */
    struct exit_cfi_maps maps;         /* the exit path's hand-off (sampler/exit/cfi_maps.h) */
    size_t maps_live;                  /* maps published now (one per live process at most) */
    uint64_t maps_retired;             /* replaced or their process ended */
    uint64_t compiled, failed, no_build_id, bytes_read, ns;
    uint64_t from_file;               /* tables compiled from the binary's file instead */
    uint64_t from_disk;               /* ... from (or with pages from) its file on a disk */
    uint64_t from_cache;              /* ... with pages from the guest's page cache */
    uint64_t kept_bytes, over_budget; /* memory of the tables kept; modules left without */
    char last_error[HV_ERR_MSG_MAX + DISCOVER_NAME_MAX + 8];
};

static int cfi_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    struct cfi *c = calloc(1, sizeof(*c));
    if (!c)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    env->core->cfi = &c->maps; /* the exit path reads the maps from here on */
    *st = c;
    return 0;
}

static void cfi_destroy(void *st)
{
    struct cfi *c = st;
    if (!c)
        return;
    for (size_t i = 0; i < c->tables.n; i++) {
        cfi_table_free(c->tables.v[i]);
        free(c->tables.v[i]);
    }
    /* The vCPUs have stopped: what is still published goes with the rest. */
    for (uint32_t proc = 1; proc <= ID_MAX_PROCS; proc++)
        free((void *)exit_cfi_current(&c->maps, proc));
    vec_free(&c->tables);
    vec_free(&c->e);
    free(c);
}

static struct cfi_entry *entry_of(struct cfi *c, const struct discover_module *m)
{
    for (size_t i = 0; i < c->e.n; i++)
        if (c->e.v[i].build_id_len == m->build_id_len &&
            !memcmp(c->e.v[i].build_id, m->build_id, m->build_id_len))
            return &c->e.v[i];
    if (c->e.n >= CFI_MAX_TABLES)
        return NULL;
    struct cfi_entry *e = vec_push(&c->e);
    if (!e)
        return NULL;
    *e = (struct cfi_entry){.build_id_len = m->build_id_len};
    memcpy(e->build_id, m->build_id, m->build_id_len);
    return e;
}

/* The module's segment that holds .eh_frame_hdr (run-time, page-rounded), or NULL. */
static const struct discover_seg *eh_segment(const struct discover_module *m)
{
    for (unsigned i = 0; i < m->nseg; i++)
        if (m->eh_frame_hdr >= m->seg[i].start &&
            m->eh_frame_hdr - m->seg[i].start < m->seg[i].size)
            return &m->seg[i];
    return NULL;
}

/* Where compile() found the pages the process does not map. */
struct fill {
    uint8_t from; /* FROM_CACHE, FROM_DISK, or 0: none */
    uint64_t pages, holes;
};

/* Compile m's table from the guest's memory. The bytes read: from .eh_frame_hdr's page (or
 * .eh_frame's, where that lies lower in the segment) to the end of its segment, page by page;
 * a page the process does not map, from the module's file (its bytes at the segment's file
 * offset: a read-only segment's pages are the file's). */
static struct cfi_table *compile(struct cfi *c, const struct rec_env *env,
                                 const struct guestos_as *as, const struct discover_module *m,
                                 struct fill *fill, struct hv_err *err)
{
    const struct discover_seg *seg = eh_segment(m);
    if (!seg) {
        hv_errf(err, ".eh_frame_hdr outside the module's segments");
        return NULL;
    }
    uint64_t lo = m->eh_frame_hdr & ~0xfffull, hi = seg->start + seg->size;
    /* .eh_frame_ptr (LSB §10.6.2): 4 bytes in, pcrel|sdata4 as every x86-64 linker writes it. */
    uint8_t head[8];
    if (guestos_read_user(env->os, env->mem, as, m->eh_frame_hdr, head, sizeof(head)) &&
        head[0] == 1 && head[1] == 0x1b) {
        int32_t rel;
        memcpy(&rel, head + 4, 4);
        uint64_t ef = (m->eh_frame_hdr + 4 + (uint64_t)(int64_t)rel) & ~0xfffull;
        if (ef >= seg->start && ef < lo)
            lo = ef;
    }
    if (hi - lo > CFI_READ_MAX)
        hi = lo + CFI_READ_MAX;
    size_t len = (size_t)(hi - lo), pages = len / 4096;
    uint8_t *data = malloc(len), *present = calloc(pages ? pages : 1, 1);
    struct cfi_table *t = calloc(1, sizeof(*t));
    if (!data || !present || !t) {
        free(data);
        free(present);
        free(t);
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    struct module_file f;
    int have_file = -1; /* not looked for yet */
    bool fillable = m->file_offsets && !(seg->flags & PF_W);
    for (size_t p = 0; p < pages; p++) {
        present[p] = guestos_read_user(env->os, env->mem, as, lo + p * 4096, data + p * 4096, 4096);
        if (present[p] || !fillable)
            continue;
        if (have_file < 0)
            have_file = module_file_find(env, as, m, false, &f) && module_file_same(&f, as);
        if (!have_file)
            continue;
        uint64_t index = (seg->file_offset + (lo + p * 4096 - seg->start)) / 4096;
        present[p] = module_file_page(&f, index, data + p * 4096);
        fill->from = f.v ? FROM_DISK : FROM_CACHE;
        fill->pages += present[p];
    }
    if (have_file > 0)
        fill->holes = f.holes;
    c->bytes_read += len;
    struct cfi_src src = {
        .image_base = m->start - m->bias,
        .vaddr = lo - m->bias,
        .data = data,
        .len = len,
        .present = present,
    };
    int rc = cfi_compile(&src, m->eh_frame_hdr - m->bias, 0, t, err);
    free(data);
    free(present);
    if (rc < 0) {
        free(t);
        return NULL;
    }
    return t;
}

/* Make t the entry's table if it knows more than the one it has (the old stays allocated). */
static void adopt(struct cfi *c, struct cfi_entry *e, struct cfi_table *t)
{
    if (e->t && t->stats.fdes <= e->t->stats.fdes)
        return;
    c->compiled += !e->t;
    e->t = t;
}

static void note_failure(struct cfi *c, const struct discover_module *m, const char *why)
{
    c->failed++;
    snprintf(c->last_error, sizeof(c->last_error), "%s: %s", m->name[0] ? m->name : "?", why);
}

/* The binary's own file (record --symbols), when its memory did not show the tables whole. */
static struct cfi_table *from_file(struct cfi *c, const struct rec_env *env,
                                   const struct discover_module *m)
{
    if (!env->cfg->find_file)
        return NULL;
    char *path =
        env->cfg->find_file(env->cfg->find_file_ctx, m->build_id, m->build_id_len, m->name);
    if (!path)
        return NULL;
    struct hv_err err = {0};
    struct cfi_table *t = cfi_table_from_file(path, &err);
    free(path);
    if (!t)
        note_failure(c, m, err.msg);
    return t;
}

/* The binary's file on a disk hvprof serves (sampler/parts/module_files.h), used only if its
 * build-id is the module's. */
static struct cfi_table *from_disk(struct cfi *c, const struct rec_env *env,
                                   const struct guestos_as *as, const struct discover_module *m)
{
    struct module_file f;
    if (!module_file_find(env, as, m, false, &f) || !f.v)
        return NULL;
    struct cfi_file_reader r = module_file_reader(&f);
    struct hv_err err = {0};
    struct cfi_table *t = cfi_table_from_reader(&r, m->build_id, m->build_id_len, &err);
    if (!t)
        snprintf(env->files->last_error, sizeof(env->files->last_error), "%s", err.msg);
    return t;
}

/* Keep t for freeing at close; false (t freed) when out of memory. */
static bool keep(struct cfi *c, struct cfi_table *t)
{
    if (vec_append(&c->tables, t)) {
        c->kept_bytes += cfi_table_bytes(t);
        return true;
    }
    cfi_table_free(t);
    free(t);
    return false;
}

/* The table to use for m now: compiled from the guest's memory at its first look, from its file
 * (record --symbols) when that memory lacks FDEs, else from memory again at later looks. NULL
 * with *final when m will never have one (frame pointers for it). */
static const struct cfi_table *table_for(struct cfi *c, const struct rec_env *env,
                                         const struct guestos_as *as,
                                         const struct discover_module *m, bool *final)
{
    *final = true;
    if (!m->eh_frame_hdr)
        return NULL;
    if (!m->build_id_len) {
        c->no_build_id++; /* no key to share it by: frame pointers for this one */
        return NULL;
    }
    struct cfi_entry *e = entry_of(c, m);
    if (!e || e->complete)
        return e ? e->t : NULL;
    *final = false;
    if (c->kept_bytes >= CFI_KEEP_MAX) {
        e->complete = true;
        c->over_budget++;
        return e->t;
    }
    uint64_t t0 = hv_now_ns();
    struct hv_err err = {0};
    struct fill fill = {0};
    struct cfi_table *t = compile(c, env, as, m, &fill, &err);
    e->looks++;
    uint8_t from = 0;
    if (t && keep(c, t) && (adopt(c, e, t), e->t == t))
        from = FROM_MEMORY;
    bool whole = e->t && e->t->stats.fdes_absent == 0;
    if (!whole && !e->file_tried) {
        e->file_tried = true;
        struct cfi_table *f = from_file(c, env, m);
        if (f && keep(c, f)) {
            adopt(c, e, f);
            c->from_file++;
            whole = true;
            from = FROM_FILE;
        }
    }
    /* The disk after --symbols: a file the user gave is the one they mean. */
    if (!whole && !e->disk_tried && env->cfg->disks) {
        e->disk_tried = true;
        struct cfi_table *f = from_disk(c, env, as, m);
        if (f && keep(c, f)) {
            adopt(c, e, f);
            c->from_disk++;
            whole = true;
            from = FROM_DISK;
        }
    }
    e->complete = whole || e->looks >= CFI_LOOKS;
    if (e->complete && !e->t) {
        note_failure(c, m, err.msg[0] ? err.msg : "out of memory");
        struct module_note *n = module_note_of(env, m);
        if (n)
            n->cfi_failed = true;
    }
    struct module_note *n = from ? module_note_of(env, m) : NULL;
    if (n) {
        n->cfi_from = from;
        n->fdes = e->t->stats.fdes;
        n->fdes_absent = e->t->stats.fdes_absent;
        n->fill_from = from == FROM_MEMORY ? fill.from : 0;
        n->fill_pages = from == FROM_MEMORY ? fill.pages : 0;
        n->fill_holes = from == FROM_MEMORY ? fill.holes : 0;
        /* Counted once per module: the first table adopted that used the source. */
        if (from == FROM_MEMORY && fill.pages && !n->counted) {
            n->counted = true;
            c->from_cache += fill.from == FROM_CACHE;
            c->from_disk += fill.from == FROM_DISK;
        }
    }
    c->ns += hv_now_ns() - t0;
    *final = e->complete;
    return e->t;
}

static int by_lo(const void *a, const void *b)
{
    const struct gw_cfi_module *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool same_map(const struct gw_cfi_map *a, const struct gw_cfi_map *b)
{
    if (!a || a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->m[i].lo != b->m[i].lo || a->m[i].hi != b->m[i].hi || a->m[i].bias != b->m[i].bias ||
            a->m[i].t != b->m[i].t)
            return false;
    return true;
}

static void cfi_address_space(void *st, const struct rec_env *env, uint32_t proc,
                              const struct guestos_as *as, const struct discover_module *found,
                              size_t n)
{
    struct cfi *c = st;
    if (!c || proc == 0 || proc > ID_MAX_PROCS)
        return;
    struct gw_cfi_map *map = malloc(sizeof(*map) + (n ? n : 1) * sizeof(map->m[0]));
    if (!map)
        return;
    map->n = 0;
    for (size_t i = 0; i < n; i++) {
        bool final;
        const struct cfi_table *t = table_for(c, env, as, &found[i], &final);
        /* A module that will have no table is in the map too (t NULL): its code is known, and
         * the exit path does not wait for its tables (sampler/exit/stack_copy.h). */
        if (t && !t->nrows)
            t = NULL;
        if ((t || final) && found[i].end > found[i].start)
            map->m[map->n++] =
                (struct gw_cfi_module){found[i].start, found[i].end, found[i].bias, t};
    }
    qsort(map->m, map->n, sizeof(map->m[0]), by_lo);
    size_t o = 0; /* overlapping images (a guest mid-exec): keep the first of each */
    for (size_t i = 0; i < map->n; i++)
        if (!o || map->m[i].lo >= map->m[o - 1].hi)
            map->m[o++] = map->m[i];
    map->n = o;
    const struct gw_cfi_map *cur = exit_cfi_current(&c->maps, proc);
    if ((!cur && !map->n) || same_map(cur, map)) {
        free(map);
        return;
    }
    exit_cfi_publish(&c->maps, proc, map);
    if (cur) {
        rec_retire(env, (void *)cur, free);
        c->maps_retired++;
    } else {
        c->maps_live++;
    }
}

/* Its process ended: its map is unpublished, and freed once no vCPU can be walking with it. */
static void cfi_process_ended(void *st, const struct rec_env *env, uint32_t proc)
{
    struct cfi *c = st;
    const struct gw_cfi_map *cur = c ? exit_cfi_current(&c->maps, proc) : NULL;
    if (!cur)
        return;
    exit_cfi_publish(&c->maps, proc, NULL);
    rec_retire(env, (void *)cur, free);
    c->maps_live--;
    c->maps_retired++;
}

static void cfi_summary(const void *state, const struct rec_env *env, FILE *out)
{
    const struct cfi *c = state;
    uint64_t walks = 0, frames = 0, gaps = 0, rules = 0;
    for (unsigned i = 0; i < env->cfg->nvcpus; i++) {
        walks += env->core->v[i].st.cfi_walks;
        frames += env->core->v[i].st.cfi_frames;
        gaps += env->core->v[i].st.cfi_gaps;
        rules += env->core->v[i].st.cfi_rule_stops;
    }
    if (!c || (!c->compiled && !c->failed && !walks))
        return;
    /* Of the tables in use (one per binary): a replaced table is not counted. */
    size_t rows = 0, bytes = 0;
    struct cfi_stats st = {0};
    for (size_t i = 0; i < c->e.n; i++) {
        const struct cfi_table *t = c->e.v[i].t;
        if (!t)
            continue;
        rows += t->nrows;
        bytes += cfi_table_bytes(t);
        st.fdes += t->stats.fdes;
        st.fdes_absent += t->stats.fdes_absent;
        st.fdes_bad += t->stats.fdes_bad;
        st.unsupported += t->stats.unsupported;
    }
    fprintf(out,
            "  user stacks: DWARF CFI of %" PRIu64 " modules, %" PRIu64 " of them from their "
            "files, %" PRIu64 " from the disks, %" PRIu64 " with pages from the guest's page "
            "cache (%" PRIu64 " FDEs, %zu rows, %.1f KiB host memory; "
            "%.1f MiB of guest memory read, %.1f ms in all); %" PRIu64
            " FDEs on pages not present%s, %" PRIu64 " malformed, %" PRIu64
            " rows with an untracked CFA register\n",
            c->compiled, c->from_file, c->from_disk, c->from_cache, st.fdes, rows,
            (double)bytes / 1024, (double)c->bytes_read / 1048576, (double)c->ns / 1e6,
            st.fdes_absent,
            st.fdes_absent && !env->cfg->find_file
                ? (env->cfg->disks ? " (on no disk hvprof reads: record --symbols DIR gives them)"
                                   : " (record --symbols DIR gives them from the files)")
                : "",
            st.fdes_bad, st.unsupported);
    fprintf(out,
            "  user walks with CFI: %" PRIu64 " (%" PRIu64 " frames from the tables); %" PRIu64
            " met code of a module without a rule for it (frame pointers there), %" PRIu64
            " stopped at a rule they cannot evaluate\n",
            walks, frames, gaps, rules);
    if (c->failed)
        fprintf(out, "  user stacks: %" PRIu64 " modules' CFI could not be compiled (last: %s)\n",
                c->failed, c->last_error);
    if (c->over_budget)
        fprintf(out,
                "  user stacks: %" PRIu64 " modules left without CFI: the tables kept reached "
                "%.0f MiB of host memory, the limit\n",
                c->over_budget, (double)CFI_KEEP_MAX / 1048576);
}

const struct rec_source_ops rec_source_cfi = {
    .name = "cfi",
    .create = cfi_create,
    .address_space = cfi_address_space,
    .process_ended = cfi_process_ended,
    .summary = cfi_summary,
    .destroy = cfi_destroy,
};
