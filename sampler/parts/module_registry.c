#include "sampler/parts/module_registry.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/recording.h"

void discover_registry_init(struct discover_registry *r)
{
    memset(r, 0, sizeof(*r));
    r->next_id = 1;
}

void discover_registry_forget(struct discover_registry *r, uint64_t pid_koid)
{
    size_t o = 0;
    for (size_t i = 0; i < r->maps.n; i++)
        if (r->maps.v[i].pid != pid_koid)
            r->maps.v[o++] = r->maps.v[i];
    r->maps.n = o;
}

void discover_registry_free(struct discover_registry *r)
{
    vec_free(&r->mods);
    vec_free(&r->maps);
    memset(r, 0, sizeof(*r));
}

static struct discover_registry_module *find_module(const struct discover_registry *r,
                                                    const uint8_t *id, uint32_t id_len,
                                                    const char *name, uint64_t header_va)
{
    for (size_t i = 0; i < r->mods.n; i++) {
        struct discover_registry_module *m = &r->mods.v[i];
        if (id_len ? m->build_id_len == id_len && !memcmp(m->build_id, id, id_len)
                   : !m->build_id_len && m->header_va == header_va &&
                         (!name[0] || !strcmp(m->name, name)))
            return m;
    }
    return NULL;
}

int64_t discover_registry_id(const struct discover_registry *r, const uint8_t *build_id,
                             uint32_t build_id_len, const char *name, uint64_t header_va)
{
    const struct discover_registry_module *m =
        find_module(r, build_id, build_id_len, name, header_va);
    return m ? (int64_t)m->id : -1;
}

struct discover_registry_module *discover_registry_find(struct discover_registry *r,
                                                        const struct discover_module *m)
{
    return find_module(r, m->build_id, m->build_id_len, m->name, m->header_va);
}

/* How well a name says what a module is: a path, a bare name (soname), a placeholder. */
static int name_rank(const char *name)
{
    if (name[0] == '/')
        return 2;
    return name[0] && !hvfxt_module_name_is_placeholder(name) ? 1 : 0;
}

/* Module and mapping records are at most ~40 bytes plus the name and build-id
 * (docs/fxt-samples.md section 3): estimates for the budget's check. */
#define MODULE_RECORD_COST  (64u + DISCOVER_NAME_MAX + 64u)
#define MAPPING_RECORD_COST 96u

/* The module's id, writing its record the first time (and again when it gets a better name).
 * -2: a new module that the metadata budget has no room for. */
static int64_t module_id(struct fxt_writer *w, struct discover_registry *r, const uint8_t *id,
                         uint32_t id_len, const char *name, uint64_t header_va, int *written,
                         struct hv_err *err)
{
    struct discover_registry_module *m = find_module(r, id, id_len, name, header_va);
    if (m && name_rank(name) > name_rank(m->name) &&
        meta_budget_allows(r->budget, MODULE_RECORD_COST)) {
        /* A later look named it better (the loader's path for what only had its soname): the
         * same id again with the new name (docs/fxt-samples.md, "Module"). */
        snprintf(m->name, sizeof(m->name), "%s", name);
        struct hvfxt_module rec = {.id = m->id,
                                   .name = m->name,
                                   .name_len = (uint16_t)strlen(m->name),
                                   .build_id = m->build_id,
                                   .build_id_len = (uint16_t)m->build_id_len};
        if (hvfxt_write_module(w, &rec, err) < 0)
            return -1;
        (*written)++;
    }
    if (m)
        return (int64_t)m->id;
    if (!meta_budget_allows(r->budget, MODULE_RECORD_COST))
        return -2;
    if (!vec_reserve(&r->mods, 1))
        return hv_errk(err, HV_ERR_NO_MEMORY, "discover: out of memory");
    m = &r->mods.v[r->mods.n];
    memset(m, 0, sizeof(*m));
    if (id_len > sizeof(m->build_id))
        id_len = sizeof(m->build_id);
    memcpy(m->build_id, id, id_len);
    m->build_id_len = id_len;
    m->header_va = header_va;
    if (name[0])
        snprintf(m->name, sizeof(m->name), "%s", name);
    else
        snprintf(m->name, sizeof(m->name), HVFXT_MODULE_PLACEHOLDER_FMT, header_va);
    m->id = r->next_id;
    struct hvfxt_module rec = {.id = m->id,
                               .name = m->name,
                               .name_len = (uint16_t)strlen(m->name),
                               .build_id = m->build_id,
                               .build_id_len = (uint16_t)id_len};
    if (hvfxt_write_module(w, &rec, err) < 0)
        return -1;
    r->mods.n++;
    r->next_id++;
    (*written)++;
    return (int64_t)m->id;
}

static int mapping(struct fxt_writer *w, struct discover_registry *r, uint64_t pid, uint64_t mod,
                   uint64_t start, uint64_t size, uint64_t vaddr, uint64_t flags, uint64_t ts,
                   const uint64_t *file_offset, int *written, struct hv_err *err)
{
    for (size_t i = 0; i < r->maps.n; i++) {
        if (r->maps.v[i].pid == pid && r->maps.v[i].start == start && r->maps.v[i].module_id == mod)
            return 0;
    }
    if (!meta_budget_allows(r->budget, MAPPING_RECORD_COST))
        return 0;
    if (!vec_reserve(&r->maps, 1))
        return hv_errk(err, HV_ERR_NO_MEMORY, "discover: out of memory");
    struct hvfxt_mapping rec = {.pid = pid,
                                .module_id = mod,
                                .start = start,
                                .size = size,
                                .vaddr = vaddr,
                                .flags = flags,
                                .ts = ts,
                                .has_file_offset = file_offset != NULL,
                                .file_offset = file_offset ? *file_offset : 0};
    if (hvfxt_write_mapping(w, &rec, err) < 0)
        return -1;
    r->maps.v[r->maps.n++] = (struct discover_registry_mapping){pid, start, mod};
    (*written)++;
    return 0;
}

/* ELF p_flags (PF_X 1, PF_W 2, PF_R 4) to the mapping record's flags (read 1, write 2, exec 4). */
static uint64_t map_flags(uint32_t pf)
{
    return ((pf & PF_R) ? HVFXT_MAP_READ : 0) | ((pf & PF_W) ? HVFXT_MAP_WRITE : 0) |
           ((pf & PF_X) ? HVFXT_MAP_EXEC : 0);
}

int discover_record(struct fxt_writer *w, struct discover_registry *reg, uint64_t pid_koid,
                    const struct discover_module *m, size_t n, uint64_t ts, struct hv_err *err)
{
    int written = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t id = module_id(w, reg, m[i].build_id, m[i].build_id_len, m[i].name, m[i].header_va,
                               &written, err);
        if (id == -2)
            continue; /* left out, counted in the budget */
        if (id < 0)
            return -1;
        for (unsigned s = 0; s < m[i].nseg; s++) {
            const struct discover_seg *sg = &m[i].seg[s];
            if (mapping(w, reg, pid_koid, (uint64_t)id, sg->start, sg->size, sg->start - m[i].bias,
                        map_flags(sg->flags), ts, m[i].file_offsets ? &sg->file_offset : NULL,
                        &written, err) < 0)
                return -1;
        }
    }
    return written;
}

int64_t discover_record_module(struct fxt_writer *w, struct discover_registry *reg,
                               uint64_t pid_koid, const struct discover_module *m, uint64_t ts,
                               struct hv_err *err)
{
    if (discover_record(w, reg, pid_koid, m, 1, ts, err) < 0)
        return -1;
    int64_t id = discover_registry_id(reg, m->build_id, m->build_id_len, m->name, m->header_va);
    return id >= 0 ? id : -2; /* no room left in the metadata budget: counted there */
}
