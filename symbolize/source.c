#include "symbolize/source.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "common/files.h"
#include "symbolize/debuginfod.h"
#include "symbolize/kallsyms.h"

static void drop_elf(struct sym_source *s)
{
    if (s->elf) {
        elf_symbols_free(s->elf);
        free(s->elf);
        s->elf = NULL;
    }
    dwarf_lines_close(s->lines);
    s->lines = NULL;
    s->lines_tried = false;
    free(s->file);
    s->file = NULL;
}

static void drop_table(struct sym_source *s)
{
    if (s->table) {
        symtab_free(s->table);
        free(s->table);
        s->table = NULL;
    }
}

void sym_source_free(struct sym_source *s)
{
    drop_elf(s);
    drop_table(s);
}

const struct symtab *sym_source_symtab(const struct sym_source *s)
{
    return s->elf ? &s->elf->syms : s->table;
}

static bool same_build(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
    return !alen || !blen || (alen == blen && !memcmp(a, b, alen));
}

int sym_source_find(struct sym_source *s, struct symbol_path *sp, const uint8_t *build_id,
                    uint32_t build_id_len, const char *name, struct hv_err *err)
{
    return sym_source_find_in(s, sp, build_id, build_id_len, name, NULL, err);
}

int sym_source_find_in(struct sym_source *s, struct symbol_path *sp, const uint8_t *build_id,
                       uint32_t build_id_len, const char *name, const char *container,
                       struct hv_err *err)
{
    char *path = symbol_path_find_in(sp, build_id, build_id_len, name, container);
    if (!path)
        return 0;
    struct elf_symbols *es = calloc(1, sizeof(*es));
    if (!es) {
        free(path);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    struct hv_err why = {0};
    int rc = elf_symbols_load_file(es, path, &why);
    /* A file found by name must be the recorded build. */
    if (rc == 0 && build_id_len && es->build_id_len != build_id_len)
        rc = 1;
    if (rc == 0 && !same_build(es->build_id, es->build_id_len, build_id, build_id_len))
        rc = 1;
    if (rc != 0) {
        elf_symbols_free(es); /* idempotent: a failed load already freed it */
        free(es);
        free(path);
        /* An unusable candidate (another build, a cut-off or foreign file, one that cannot be
         * opened) is not an error: the module keeps what it had. Running out of memory is:
         * the report would silently lose names. */
        if (rc < 0 && hv_err_kind(&why) == HV_ERR_NO_MEMORY) {
            *err = why;
            return -1;
        }
        return 0;
    }
    /* A stripped file (its .dynsym alone: the guest's own binary, found by name or build-id)
     * names only exported functions; its debug file from a debuginfod server names them all. */
    if (!es->has_symtab && sp->debuginfod && build_id_len >= 2) {
        char *dbg = hv_debuginfod_find(sp->debuginfod, build_id, build_id_len, name);
        struct elf_symbols *full = dbg ? calloc(1, sizeof(*full)) : NULL;
        if (full && elf_symbols_load_file(full, dbg, &why) == 0 && full->has_symtab &&
            same_build(full->build_id, full->build_id_len, build_id, build_id_len)) {
            elf_symbols_free(es);
            free(es);
            free(path);
            es = full;
            path = dbg;
        } else {
            if (full)
                elf_symbols_free(full);
            free(full);
            free(dbg);
        }
    }
    drop_elf(s);
    s->elf = es;
    s->file = path;
    return 1;
}

int sym_source_load_kernel(struct sym_source *s, const char *path, const uint8_t *build_id,
                           uint32_t build_id_len, struct hv_err *err)
{
    /* Which reader: the first bytes say (a vmlinux, or kallsyms / System.map text). */
    FILE *f = hv_fopen_input(path, err);
    if (!f)
        return -1;
    uint8_t magic[SELFMAG] = {0};
    size_t n = fread(magic, 1, sizeof(magic), f);
    fclose(f);
    struct elf_symbols *es = NULL;
    struct symtab *ks = NULL;
    if (n == SELFMAG && !memcmp(magic, ELFMAG, SELFMAG)) {
        es = calloc(1, sizeof(*es));
        if (!es)
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        if (elf_symbols_load_file(es, path, err) < 0) {
            free(es);
            return -1;
        }
        if (!same_build(es->build_id, es->build_id_len, build_id, build_id_len)) {
            elf_symbols_free(es);
            free(es);
            return hv_errk(err, HV_ERR_USAGE,
                           "%s: build-id differs from the recorded guest kernel's", path);
        }
    } else {
        ks = calloc(1, sizeof(*ks));
        if (!ks)
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        symtab_init(ks);
        if (kallsyms_load_file(ks, path, err) < 0) {
            symtab_free(ks);
            free(ks);
            return -1;
        }
    }
    char *copy = strdup(path);
    if (!copy) {
        if (es) {
            elf_symbols_free(es);
            free(es);
        }
        if (ks) {
            symtab_free(ks);
            free(ks);
        }
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    sym_source_free(s);
    s->elf = es;
    s->table = ks;
    s->file = copy;
    return 0;
}

int sym_source_add(struct sym_source *s, uint64_t addr, const char *name, size_t len,
                   uint8_t strength, struct hv_err *err)
{
    if (s->elf)
        return 0;
    if (!s->table) {
        s->table = calloc(1, sizeof(*s->table));
        if (!s->table)
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        symtab_init(s->table);
    }
    return symtab_add(s->table, addr, 0, name, len, strength, err);
}

void sym_source_finish(struct sym_source *s)
{
    if (s->table)
        symtab_finish(s->table);
}

bool sym_source_lookup(struct sym_source *s, uint64_t addr, bool lines, struct sym_hit *out)
{
    memset(out, 0, sizeof(*out));
    const struct symtab *st = sym_source_symtab(s);
    const struct sym *sym = st ? symtab_lookup(st, addr) : NULL;
    if (!sym)
        return false;
    out->name = symtab_name(st, sym);
    out->offset = addr - sym->addr;
    if (!lines || !s->elf || !s->file)
        return true;
    /* Best effort: a file without DWARF, or an address it does not cover, leaves no line. */
    if (!s->lines_tried) {
        s->lines_tried = true;
        struct hv_err ignored = {0};
        (void)dwarf_lines_open(&s->lines, s->file, &ignored);
    }
    if (s->lines && !dwarf_lines_lookup(s->lines, addr, &out->line))
        memset(&out->line, 0, sizeof(out->line));
    return true;
}

const char *sym_source_origin(const struct sym_source *s, char *buf, size_t len)
{
    const char *kind = s->elf ? (s->elf->from_minidebuginfo ? "MiniDebugInfo"
                                 : s->elf->has_symtab       ? ".symtab"
                                                            : ".dynsym")
                              : "kallsyms text";
    if (s->file && hv_debuginfod_cache_path(s->file))
        snprintf(buf, len, "debuginfod (%s)", kind);
    else if (s->file)
        snprintf(buf, len, "%s (%s)", s->file, kind);
    else
        snprintf(buf, len, "%s", s->table && s->table->n ? "the recording" : "none");
    return buf;
}
