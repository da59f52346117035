#include "sampler/disk_files.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/sampler_priv.h"
#include "symbolize/elf_symbols.h"

/* A file read whole for its .symtab, at most: libpython3.11's is 7 MiB, the largest programs a
 * few hundred; past this the module keeps the names its memory shows. */
#define DISK_SYMTAB_MAX_FILE (256ull << 20)

bool sampler_disk_file(struct sampler *s, const struct guestos_as *as,
                       const struct discover_module *m, bool count, struct sampler_disk_file *f)
{
    struct sampler_disk_stats *st = &s->disk_stats;
    struct guestos_file gf;
    if (!s->cfg.disks || !s->os.ops->user_page_file)
        return false; /* nothing to count: this OS layer cannot tell */
    if (!guestos_user_page_file(&s->os, s->mem, as, m->header_va, &gf) ||
        (gf.index != 0 && gf.index != UINT64_MAX)) {
        st->not_file += count;
        return false;
    }
    struct diskfs_volume *v = diskfs_find_uuid(s->cfg.disks, gf.fs_uuid);
    if (!v) {
        st->elsewhere += count;
        return false;
    }
    struct hv_err err = {0};
    *f = (struct sampler_disk_file){.v = v, .ino = gf.ino, .st = st};
    if (diskfs_file_size(v, gf.ino, &f->size, &err) < 0) {
        snprintf(st->last_error, sizeof(st->last_error), "%s", err.msg);
        return false;
    }
    snprintf(f->name, sizeof(f->name), "%s (inode %" PRIu64 " of %s)", m->name[0] ? m->name : "?",
             gf.ino, v->where);
    return true;
}

static bool disk_read(void *ctx, uint64_t off, void *dst, size_t len)
{
    struct sampler_disk_file *f = ctx;
    size_t got;
    struct hv_err err;
    if (diskfs_read(f->v, f->ino, off, dst, len, &got, &err) < 0) {
        snprintf(f->st->last_error, sizeof(f->st->last_error), "%s", err.msg);
        return false;
    }
    f->st->bytes += got;
    return got == len;
}

struct cfi_file_reader sampler_disk_reader(struct sampler_disk_file *f)
{
    return (struct cfi_file_reader){.name = f->name, .size = f->size, .read = disk_read, .ctx = f};
}

bool sampler_disk_symbols(struct sampler *s, const struct guestos_as *as,
                          const struct discover_module *m, guestos_symbol_fn fn, void *ctx)
{
    struct sampler_disk_file f;
    if (!m->build_id_len || !sampler_disk_file(s, as, m, true, &f) || f.size > DISK_SYMTAB_MAX_FILE)
        return false;
    uint8_t *buf = malloc(f.size ? f.size : 1);
    if (!buf || !disk_read(&f, 0, buf, f.size)) {
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
        int n = snprintf(s->disk_stats.last_error, sizeof(s->disk_stats.last_error),
                         "%.120s: ", f.name);
        snprintf(s->disk_stats.last_error + n, sizeof(s->disk_stats.last_error) - (size_t)n, "%.*s",
                 (int)(sizeof(s->disk_stats.last_error) - (size_t)n - 1), err.msg);
        return false;
    }
    bool same =
        es.build_id_len == m->build_id_len && !memcmp(es.build_id, m->build_id, m->build_id_len);
    if (!same)
        snprintf(s->disk_stats.last_error, sizeof(s->disk_stats.last_error),
                 "%s: another build than the guest's (build-id differs)", f.name);
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
    if (use)
        s->disk_stats.symtabs++;
    elf_symbols_free(&es);
    return use;
}

void sampler_disk_summary(const struct sampler *s, FILE *out)
{
    const struct sampler_disk_stats *st = &s->disk_stats;
    if (!s->cfg.disks)
        return;
    if (!s->os.ops->user_page_file) {
        fprintf(out,
                "  from the disks: nothing read: the %s OS layer cannot tell which file a "
                "module is\n",
                s->os.ops->name);
        return;
    }
    fprintf(out,
            "  from the disks: %" PRIu64 " modules named from their file's .symtab, %.1f MiB read; "
            "%" PRIu64 " modules the guest kernel tied to no file, %" PRIu64
            " on no disk hvprof reads%s%s\n",
            st->symtabs, (double)st->bytes / 1048576, st->not_file, st->elsewhere,
            st->last_error[0] ? "; last failure: " : "", st->last_error);
}
