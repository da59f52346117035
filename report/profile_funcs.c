/* The profile's functions, interned: one per (name, module), whoever names it (symbolization,
 * a runtime's report half). The key is the printable copy of the name, so equal names stay one
 * function. */
#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"
#include "report/profile.h"
#include "report/profile_priv.h"
#include "symbolize/demangle.h"

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

void prof_funcs_index_free(struct profile *p)
{
    struct hashidx *ix = p->func_index;
    if (!ix)
        return;
    hashidx_free(ix);
    free(ix);
    p->func_index = NULL;
}

int prof_intern_func(struct profile *p, const char *name, uint32_t module, struct hv_err *err)
{
    if (!p->func_index) {
        struct hashidx *fresh = calloc(1, sizeof(*fresh));
        if (!fresh)
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
        hashidx_init(fresh);
        p->func_index = fresh;
    }
    struct hashidx *ix = p->func_index;
    /* C++ and Rust names as people read them (perf's default; --no-demangle keeps them). */
    char *demangled = p->no_demangle ? NULL : hv_demangle(name);
    char *copy = prof_dup_printable(demangled ? demangled : name); /* the key too */
    free(demangled);
    if (!copy)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    struct func_key k = {p, copy, module};
    uint64_t h = hashidx_u64(hashidx_bytes(HASHIDX_SEED, copy, strlen(copy)), module);
    uint32_t f = hashidx_find(ix, h, func_eq, &k);
    if (f != HASHIDX_NONE) {
        free(copy);
        return (int)f;
    }
    if (PROF_VEC_RESERVE(p->funcs, err) < 0) {
        free(copy);
        return -1;
    }
    p->funcs.v[p->funcs.n] = (struct prof_func){.name = copy, .module = module};
    if (hashidx_insert(ix, h, (uint32_t)p->funcs.n) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    return (int)p->funcs.n++;
}
