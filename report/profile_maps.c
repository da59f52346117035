#include "report/profile_maps.h"
#include "report/profile_priv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Mappings of one pid that overlap one address: more than this many candidates below the address
 * are not searched (a hostile recording's pile of overlapping mappings stays bounded). */
#define OVERLAP_SCAN 64

struct prof_maps_index *prof_maps_index(struct profile *p)
{
    if (!p->maps_index) {
        struct prof_maps_index *x = calloc(1, sizeof(*x));
        if (!x)
            return NULL;
        hashidx_init(&x->mods);
        hashidx_init(&x->maps);
        p->maps_index = x;
    }
    return p->maps_index;
}

void prof_maps_index_free(struct profile *p)
{
    struct prof_maps_index *x = p->maps_index;
    if (!x)
        return;
    hashidx_free(&x->mods);
    hashidx_free(&x->maps);
    free(x->order);
    free(x);
    p->maps_index = NULL;
}

uint64_t prof_module_hash(const char *name, const uint8_t *build_id, uint32_t build_id_len,
                          bool kernel)
{
    uint64_t h = build_id_len ? hashidx_bytes(HASHIDX_SEED, build_id, build_id_len)
                              : hashidx_bytes(HASHIDX_SEED ^ 1, name, strlen(name));
    return hashidx_u64(h, kernel);
}

uint64_t prof_mapping_hash(uint64_t pid, uint64_t start, uint64_t size, uint32_t module)
{
    return hashidx_u64(hashidx_u64(hashidx_u64(hashidx_u64(HASHIDX_SEED, pid), start), size),
                       module);
}

static int by_pid_start(const void *a, const void *b, void *ctx)
{
    const struct profile *p = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const struct prof_mapping *x = &p->mappings.v[i], *y = &p->mappings.v[j];
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* The sorted order of the mappings as they are now; false when out of memory. */
static bool sorted(struct profile *p, struct prof_maps_index *x)
{
    if (x->order && x->norder == p->mappings.n)
        return true;
    uint32_t *o = realloc(x->order, (p->mappings.n ? p->mappings.n : 1) * sizeof(*o));
    if (!o)
        return false;
    for (size_t i = 0; i < p->mappings.n; i++)
        o[i] = (uint32_t)i;
    if (p->mappings.n > 1)
        qsort_r(o, p->mappings.n, sizeof(*o), by_pid_start, p);
    x->order = o;
    x->norder = p->mappings.n;
    return true;
}

/* First position in the order whose (pid, start) is above (pid, addr). */
static size_t upper(const struct profile *p, const uint32_t *o, size_t n, uint64_t pid,
                    uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct prof_mapping *m = &p->mappings.v[o[mid]];
        if (m->pid < pid || (m->pid == pid && m->start <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint32_t prof_find_mapping(struct profile *p, uint64_t pid, uint64_t addr)
{
    struct prof_maps_index *x = prof_maps_index(p);
    if (!x || !sorted(p, x))
        return PROF_NONE;
    size_t at = upper(p, x->order, x->norder, pid, addr);
    uint32_t best = PROF_NONE;
    for (size_t k = 0; k < OVERLAP_SCAN && at > 0; k++) {
        uint32_t id = x->order[--at];
        const struct prof_mapping *m = &p->mappings.v[id];
        if (m->pid != pid)
            break;
        if (addr - m->start < m->size && id < best)
            best = id; /* of overlapping mappings, the first added, as before */
    }
    return best;
}

const uint32_t *prof_mappings_of(struct profile *p, uint64_t pid, size_t *n)
{
    *n = 0;
    struct prof_maps_index *x = prof_maps_index(p);
    if (!x || !sorted(p, x))
        return NULL;
    size_t lo = 0, hi = x->norder; /* first with m.pid >= pid */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->mappings.v[x->order[mid]].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < x->norder && p->mappings.v[x->order[end]].pid == pid)
        end++;
    *n = end - lo;
    return *n ? &x->order[lo] : NULL;
}

/* ---- adding modules and mappings (by key: a recording may name 10^5 of them) ---------- */

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
    if (PROF_VEC_RESERVE(p->modules, err) < 0)
        return -1;
    struct prof_module *m = &p->modules.v[p->modules.n];
    memset(m, 0, sizeof(*m));
    if (!(m->name = prof_dup_printable(name)))
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
    if (PROF_VEC_RESERVE(p->mappings, err) < 0)
        return -1;
    p->mappings.v[p->mappings.n] =
        (struct prof_mapping){pid, start, size, bias, file_offset, module, false};
    if (hashidx_insert(&x->maps, h, (uint32_t)p->mappings.n) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    return (int)p->mappings.n++;
}
