#include "symbolize/symtab.h"

#include <stdlib.h>
#include <string.h>

void symtab_init(struct symtab *t)
{
    memset(t, 0, sizeof(*t));
}

void symtab_free(struct symtab *t)
{
    free(t->v);
    vec_free(&t->names);
    memset(t, 0, sizeof(*t));
}

int symtab_add(struct symtab *t, uint64_t addr, uint64_t size, const char *name, size_t name_len,
               uint8_t strength, struct hv_err *err)
{
    if (t->n >= SYMTAB_MAX_SYMS)
        return hv_errk(err, HV_ERR_LIMIT, "symbol table: more than %u symbols", SYMTAB_MAX_SYMS);
    if (name_len > SYMTAB_MAX_NAME_LEN)
        name_len = SYMTAB_MAX_NAME_LEN;
    uint32_t off = (uint32_t)t->names.n;
    if (!vec_reserve(t, 1) || !vec_extend(&t->names, name, name_len) || !vec_append(&t->names, 0))
        return hv_errk(err, HV_ERR_NO_MEMORY, "symbol table: out of memory");
    t->v[t->n++] = (struct sym){.addr = addr, .size = size, .name = off, .strength = strength};
    t->sorted = 0;
    return 0;
}

/* Order: address, then the alias to keep first (strongest binding, sized, shortest name). */
static int sym_cmp(const void *a, const void *b, void *names)
{
    const char *sort_names = names;
    const struct sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->strength != y->strength)
        return x->strength > y->strength ? -1 : 1;
    if ((x->size != 0) != (y->size != 0))
        return x->size ? -1 : 1;
    size_t lx = strlen(sort_names + x->name), ly = strlen(sort_names + y->name);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return strcmp(sort_names + x->name, sort_names + y->name);
}

void symtab_finish(struct symtab *t)
{
    if (t->sorted)
        return;
    if (t->n > 1) /* qsort of a NULL array is undefined even for 0 elements (C11 7.22.5) */
        qsort_r(t->v, t->n, sizeof(*t->v), sym_cmp, t->names.v);
    size_t w = 0;
    for (size_t r = 0; r < t->n; r++) {
        if (w > 0 && t->v[w - 1].addr == t->v[r].addr) {
            /* An alias: keep the first (best), but let it inherit a size it lacks. */
            if (!t->v[w - 1].size)
                t->v[w - 1].size = t->v[r].size;
            continue;
        }
        t->v[w++] = t->v[r];
    }
    t->n = w;
    for (size_t i = 0; i + 1 < t->n; i++) {
        if (!t->v[i].size)
            t->v[i].size = t->v[i + 1].addr - t->v[i].addr;
    }
    t->sorted = 1;
}

static int contains(const struct sym *s, uint64_t addr)
{
    if (addr < s->addr)
        return 0;
    /* The last unsized symbol has nothing after it to bound it: accept it (the end of .text of
     * a kallsyms table), as nm-style tools do. */
    return s->size == 0 || addr - s->addr < s->size;
}

const struct sym *symtab_lookup(const struct symtab *t, uint64_t addr)
{
    if (!t->n || addr < t->v[0].addr)
        return NULL;
    size_t lo = 0, hi = t->n; /* last index with v[i].addr <= addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    /* A sized symbol can enclose smaller ones placed after it (nested local labels); look a few
     * entries back before giving up. */
    for (size_t k = 0; k < 8 && k <= lo; k++) {
        const struct sym *s = &t->v[lo - k];
        if (contains(s, addr))
            return t->names.v[s->name] ? s : NULL; /* an end marker: nothing here */
    }
    return NULL;
}

const struct sym *symtab_find_name(const struct symtab *t, const char *name)
{
    if (!*name)
        return NULL;
    for (size_t i = 0; i < t->n; i++) {
        if (!strcmp(t->names.v + t->v[i].name, name))
            return &t->v[i];
    }
    return NULL;
}
