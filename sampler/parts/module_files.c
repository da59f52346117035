#include "sampler/parts/module_files.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/parts/elf_parts.h"
#include "sampler/source/source.h"
#include "symbolize/elf_symbols.h"

/* A file read for its .symtab, at most: libpython3.11's is 7 MiB, the largest programs a few
 * hundred; past this the module keeps the names its memory shows. */
#define SYMTAB_MAX_FILE (256ull << 20)
/* Modules accounted for in the summary at most, and printed there at most. */
#define NOTES_MAX       4096
#define NOTES_PRINT_MAX 48
/* Pages of an image looked at for its file when its header page is not mapped. */
#define IMAGE_PROBES 64

static const char *volume_name(const struct module_file *f)
{
    return f->v ? f->v->where : "the page cache";
}

/* The file of m's image from a page of it that the process maps (module_file_find). */
static bool image_file(const struct rec_env *env, const struct guestos_as *as,
                       const struct discover_module *m, struct guestos_file *gf, uint64_t *va,
                       uint64_t *index)
{
    *va = m->header_va;
    *index = 0;
    if (guestos_user_page_file(env->os, env->mem, as, m->header_va, gf))
        return gf->index == 0 || gf->index == UINT64_MAX;
    if (!m->file_offsets || (m->header_va & 4095))
        return false;
    unsigned probes = 0;
    for (unsigned i = 0; i < m->nseg && i < DISCOVER_MAX_SEGS; i++) {
        const struct discover_seg *g = &m->seg[i];
        for (uint64_t off = 0; off < g->size && probes < IMAGE_PROBES; off += 4096, probes++) {
            if (!guestos_user_page_file(env->os, env->mem, as, g->start + off, gf))
                continue; /* not mapped (yet), or the process's own copy of a data page */
            if (gf->index != (g->file_offset + off) / 4096)
                return false; /* another file's page, or another part of it */
            *va = g->start + off;
            *index = gf->index;
            gf->index = 0;
            return true;
        }
    }
    return false;
}

bool module_file_find(const struct rec_env *env, const struct guestos_as *as,
                      const struct discover_module *m, bool count, struct module_file *f)
{
    struct module_file_stats *st = env->files;
    struct guestos_file gf;
    uint64_t probe_va, probe_index;
    if (!env->os->ops->user_page_file)
        return false; /* nothing to count: this OS layer cannot tell */
    if (!image_file(env, as, m, &gf, &probe_va, &probe_index)) {
        st->not_file += count;
        return false;
    }
    *f = (struct module_file){
        .env = env, .gf = gf, .size = gf.size, .probe_va = probe_va, .probe_index = probe_index};
    f->v = env->cfg->disks ? diskfs_find_uuid(env->cfg->disks, gf.fs_uuid) : NULL;
    if (!f->v) {
        st->elsewhere += count && env->cfg->disks;
        if (!env->os->ops->file_page)
            return false;
    } else {
        struct hv_err err = {0};
        if (diskfs_file_size(f->v, gf.ino, &f->size, &err) < 0) {
            snprintf(st->last_error, sizeof(st->last_error), "%s", err.msg);
            return false;
        }
    }
    snprintf(f->name, sizeof(f->name), "%s (inode %" PRIu64 " of %s)", m->name[0] ? m->name : "?",
             gf.ino, volume_name(f));
    return true;
}

bool module_file_page(struct module_file *f, uint64_t index, void *dst)
{
    const struct rec_env *env = f->env;
    if (index >= (f->size + 4095) / 4096)
        return false;
    if (f->v) {
        size_t want = f->size - index * 4096 < 4096 ? (size_t)(f->size - index * 4096) : 4096, got;
        struct hv_err err;
        memset(dst, 0, 4096);
        if (diskfs_read(f->v, f->gf.ino, index * 4096, dst, want, &got, &err) < 0) {
            snprintf(env->files->last_error, sizeof(env->files->last_error), "%s", err.msg);
            return false;
        }
        env->files->disk_bytes += got;
        return got == want;
    }
    int rc = guestos_file_page(env->os, env->mem, &f->gf, index, dst);
    if (rc == 1) {
        env->files->cache_bytes += 4096;
        return true;
    }
    f->holes += rc == 0;
    env->files->cache_holes += rc == 0;
    return false;
}

bool module_file_same(struct module_file *f, const struct guestos_as *as)
{
    static uint8_t mem[4096], file[4096]; /* the drain thread's only */
    if ((f->probe_va & 4095) ||
        !guestos_read_user(f->env->os, f->env->mem, as, f->probe_va, mem, sizeof(mem)))
        return false;
    for (int tries = 0; tries < 2; tries++) {
        if (module_file_page(f, f->probe_index, file) && !memcmp(mem, file, sizeof(mem)))
            return true;
        if (!f->v || !f->env->os->ops->file_page)
            return false;
        f->v = NULL; /* the disk holds another version of it: the page cache, then */
        f->size = f->gf.size;
    }
    return false;
}

/* len bytes at off, page by page. */
static bool file_read(void *ctx, uint64_t off, void *dst, size_t len)
{
    struct module_file *f = ctx;
    if (off > f->size || len > f->size - off)
        return false;
    if (f->v) { /* whole ranges at once from a disk */
        size_t got;
        struct hv_err err;
        if (diskfs_read(f->v, f->gf.ino, off, dst, len, &got, &err) < 0) {
            snprintf(f->env->files->last_error, sizeof(f->env->files->last_error), "%s", err.msg);
            return false;
        }
        f->env->files->disk_bytes += got;
        return got == len;
    }
    uint8_t page[4096], *out = dst;
    while (len) {
        uint64_t in = off % 4096;
        size_t n = 4096 - in < len ? (size_t)(4096 - in) : len;
        if (!module_file_page(f, off / 4096, page))
            return false;
        memcpy(out, page + in, n);
        out += n, off += n, len -= n;
    }
    return true;
}

struct cfi_file_reader module_file_reader(struct module_file *f)
{
    return (struct cfi_file_reader){.name = f->name, .size = f->size, .read = file_read, .ctx = f};
}

/* m's separate debug file on volume v, as the guest's -dbg/-dbgsym packages install it
 * (gdb's "Separate Debug Files"): /usr/lib/debug/.build-id/xx/rest.debug by build-id, else
 * the older path layout, /usr/lib/debug plus the module's own path (Debian 11's libc6-dbg).
 * Loaded into *es when it is there, parses, has a .symtab and is m's build. */
static bool debug_file_load(const struct rec_env *env, struct diskfs_volume *v,
                            const struct discover_module *m, struct elf_symbols *es, char *path,
                            size_t path_len)
{
    char hex[2 * sizeof(m->build_id) + 1];
    for (uint32_t i = 0; i < m->build_id_len && i < sizeof(m->build_id); i++)
        snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
    for (int layout = 0; layout < 2; layout++) {
        if (layout == 0 && m->build_id_len < 2)
            continue;
        if (layout == 1 && m->name[0] != '/')
            break;
        if (layout == 0)
            snprintf(path, path_len, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
        else
            snprintf(path, path_len, "/usr/lib/debug%s", m->name);
        uint8_t *buf = NULL;
        size_t len = 0;
        struct hv_err err = {0};
        if (diskfs_read_path(v, path, SYMTAB_MAX_FILE, &buf, &len, &err) < 0)
            continue; /* not there (the usual case), or unreadable: the module keeps .dynsym */
        env->files->disk_bytes += len;
        int rc = elf_symbols_load_mem(es, buf, len, &err);
        free(buf);
        if (rc < 0)
            continue;
        if (es->has_symtab && es->build_id_len == m->build_id_len &&
            !memcmp(es->build_id, m->build_id, m->build_id_len))
            return true;
        elf_symbols_free(es);
    }
    return false;
}

/* m's debug file on the disks hvprof serves: on its own file's volume first, then the others
 * (a /usr on a partition of its own). */
static bool debug_file_symbols(const struct rec_env *env, const struct module_file *f,
                               const struct discover_module *m, struct elf_symbols *es, char *path,
                               size_t path_len)
{
    struct diskfs *d = env->cfg->disks;
    if (!d || !m->build_id_len)
        return false;
    if (f->v && debug_file_load(env, f->v, m, es, path, path_len))
        return true;
    for (size_t i = 0; i < d->vols.n; i++)
        if (&d->vols.v[i] != f->v && debug_file_load(env, &d->vols.v[i], m, es, path, path_len))
            return true;
    return false;
}

bool module_file_symbols(const struct rec_env *env, const struct guestos_as *as,
                         const struct discover_module *m, guestos_symbol_fn fn, void *ctx)
{
    struct module_file f;
    if (!m->build_id_len || !module_file_find(env, as, m, true, &f) || f.size > SYMTAB_MAX_FILE)
        return false;
    uint8_t *buf = calloc(1, f.size ? f.size : 1);
    struct cfi_file_reader rd = module_file_reader(&f);
    if (!buf || !elf_symbol_parts_read(&rd, buf)) {
        free(buf);
        return false;
    }
    /* libelf on the bytes (symbolize/elf_symbols.c, fuzzed): functions of .symtab, else of
     * .dynsym, which the guest's memory shows already. */
    struct elf_symbols es;
    struct hv_err err = {0};
    bool ok = elf_symbols_load_mem(&es, buf, f.size, &err) == 0;
    free(buf);
    if (!ok) {
        /* elf_symbols' message; the module's name leads when it fits. */
        int n =
            snprintf(env->files->last_error, sizeof(env->files->last_error), "%.120s: ", f.name);
        snprintf(env->files->last_error + n, sizeof(env->files->last_error) - (size_t)n, "%.*s",
                 (int)(sizeof(env->files->last_error) - (size_t)n - 1), err.msg);
        return false;
    }
    bool same =
        es.build_id_len == m->build_id_len && !memcmp(es.build_id, m->build_id, m->build_id_len);
    if (!same)
        snprintf(env->files->last_error, sizeof(env->files->last_error),
                 "%s: another build than the guest's (build-id differs)", f.name);
    /* A stripped file: its separate debug file, where the guest has its debug package. */
    char debug_path[512] = "";
    if (same && !es.has_symtab) {
        struct elf_symbols dbg;
        if (debug_file_symbols(env, &f, m, &dbg, debug_path, sizeof(debug_path))) {
            elf_symbols_free(&es);
            es = dbg;
        } else {
            debug_path[0] = 0;
        }
    }
    bool use = same && es.has_symtab;
    for (size_t i = 0; use && i < es.syms.n; i++) {
        const struct sym *y = &es.syms.v[i];
        const char *name = symtab_name(&es.syms, y);
        size_t len = strlen(name);
        struct guestos_symbol g = {.addr = y->addr,
                                   .name = name,
                                   .name_len = (uint16_t)(len < UINT16_MAX ? len : UINT16_MAX),
                                   .type = y->strength >= 2 ? 'T' : 't',
                                   .size = y->size};
        if (fn(ctx, &g))
            break; /* the batch is full (its share of the budget) */
    }
    if (use) {
        bool disk = f.v || debug_path[0];
        if (debug_path[0])
            env->files->debug_files++;
        else if (disk)
            env->files->symtabs_disk++;
        else
            env->files->symtabs_cache++;
        struct module_note *n = module_note_of(env, m);
        if (n) {
            n->syms_from = disk ? FROM_DISK : FROM_CACHE;
            n->symtab = true;
            n->minidebuginfo = es.from_minidebuginfo;
            n->debug_file = debug_path[0] != 0;
        }
    }
    elf_symbols_free(&es);
    return use;
}

struct module_note *module_note_of(const struct rec_env *env, const struct discover_module *m)
{
    struct module_file_stats *st = env->files;
    for (size_t i = 0; i < st->notes.n; i++) {
        struct module_note *n = &st->notes.v[i];
        if (n->build_id_len == m->build_id_len &&
            !memcmp(n->build_id, m->build_id, m->build_id_len) &&
            (m->build_id_len || !strcmp(n->name, m->name)))
            return n;
    }
    if (st->notes.n >= NOTES_MAX)
        return NULL;
    struct module_note *n = vec_push(&st->notes);
    if (!n)
        return NULL;
    *n = (struct module_note){.build_id_len = m->build_id_len, .no_eh_frame_hdr = !m->eh_frame_hdr};
    memcpy(n->build_id, m->build_id, m->build_id_len);
    snprintf(n->name, sizeof(n->name), "%s", m->name[0] ? m->name : "?");
    return n;
}

static const char *from_name(uint8_t from)
{
    switch (from) {
    case FROM_MEMORY:
        return "memory";
    case FROM_CACHE:
        return "the page cache";
    case FROM_FILE:
        return "its file (--symbols)";
    case FROM_DISK:
        return "the disk";
    default:
        return "nowhere";
    }
}

/* One module's line: "libc.so.6: CFI from memory and the page cache (3713 FDEs), .symtab from
 * the page cache". */
static void note_line(const struct module_note *n, FILE *out)
{
    const char *base = strrchr(n->name, '/');
    fprintf(out, "    %s: ", base && base[1] ? base + 1 : n->name);
    if (n->cfi_from && n->fill_pages)
        fprintf(out, "CFI from %s and %s (%" PRIu64 " FDEs, %" PRIu64 " pages from %s)",
                from_name(n->cfi_from), from_name(n->fill_from), n->fdes, n->fill_pages,
                n->fill_from == FROM_DISK ? "the disk" : "the cache");
    else if (n->cfi_from)
        fprintf(out, "CFI from %s (%" PRIu64 " FDEs)", from_name(n->cfi_from), n->fdes);
    else
        fprintf(out, "no CFI (%s)",
                n->no_eh_frame_hdr ? "no .eh_frame_hdr: frame pointers"
                : n->cfi_failed    ? "could not be compiled"
                                   : "none read yet");
    if (n->fdes_absent)
        fprintf(out, ", %" PRIu64 " FDEs missing (%s)", n->fdes_absent,
                n->fill_holes ? "on pages the page cache does not hold: evicted or never read"
                              : "on pages not present");
    if (n->syms_from)
        fprintf(out, ", %s from %s",
                n->debug_file      ? ".symtab of its debug file (/usr/lib/debug)"
                : n->minidebuginfo ? ".symtab of its MiniDebugInfo"
                : n->symtab        ? ".symtab"
                                   : ".dynsym",
                from_name(n->syms_from));
    else
        fprintf(out, ", no names");
    fputc('\n', out);
}

void module_files_summary(const struct rec_env *env, FILE *out)
{
    const struct module_file_stats *st = env->files;
    if (env->cfg->disks && !env->os->ops->user_page_file) {
        fprintf(out,
                "  from the disks: nothing read: the %s OS layer cannot tell which file a "
                "module is\n",
                env->os->ops->name);
    } else if (env->cfg->disks) {
        fprintf(out,
                "  from the disks: %" PRIu64 " modules named from their file's .symtab, %" PRIu64
                " from their debug file in /usr/lib/debug, %.1f MiB read; %" PRIu64
                " modules the guest kernel tied to no file, %" PRIu64 " on no disk hvprof reads\n",
                st->symtabs_disk, st->debug_files, (double)st->disk_bytes / 1048576, st->not_file,
                st->elsewhere);
    }
    if (env->os->ops->file_page && (st->cache_bytes || st->cache_holes))
        fprintf(out,
                "  from the guest's page cache: %" PRIu64 " modules named from their file's "
                ".symtab, %.1f MiB read; %" PRIu64 " pages met not cached\n",
                st->symtabs_cache, (double)st->cache_bytes / 1048576, st->cache_holes);
    if (st->last_error[0])
        fprintf(out, "  module files: last failure: %s\n", st->last_error);
    if (!st->notes.n)
        return;
    fprintf(out, "  user modules, where their unwind tables and names came from:\n");
    for (size_t i = 0; i < st->notes.n && i < NOTES_PRINT_MAX; i++)
        note_line(&st->notes.v[i], out);
    if (st->notes.n > NOTES_PRINT_MAX)
        fprintf(out, "    (and %zu more modules)\n", st->notes.n - NOTES_PRINT_MAX);
}

void module_files_free(struct module_file_stats *st)
{
    vec_free(&st->notes);
}
