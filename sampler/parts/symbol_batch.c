#include "sampler/parts/symbol_batch.h"

#include <stdlib.h>
#include <string.h>

#include "sampler/parts/meta_budget.h"

int symbol_batch_add(void *batch, const struct guestos_symbol *s)
{
    struct symbol_batch *b = batch;
    if (s->addr < b->base || !s->name_len)
        return 0;
    uint64_t cost = META_SYMBOL_COST(s->name_len);
    if (b->max_bytes && b->bytes + cost > b->max_bytes) {
        b->cut = true;
        return 1;
    }
    b->bytes += cost;
    size_t off = b->names.n;
    if (!vec_reserve(b, 1) || !vec_extend(&b->names, s->name, s->name_len) ||
        !vec_append(&b->names, 0)) {
        b->oom = true;
        return 1;
    }
    uint64_t addr = s->addr - b->base;
    /* Names are kept as offsets into `names` until the buffer stops moving. */
    b->v[b->n++] =
        (struct symbol_batch_entry){.sym = {.addr = addr,
                                            .type = s->type,
                                            .name = (const char *)(uintptr_t)off,
                                            .name_len = s->name_len},
                                    .end = s->size && addr + s->size > addr ? addr + s->size : 0};
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    const struct symbol_batch_entry *x = a, *y = b;
    return x->sym.addr < y->sym.addr ? -1 : x->sym.addr > y->sym.addr;
}

int symbol_batch_write(struct symbol_batch *b, struct fxt_writer *w, uint64_t id, uint64_t end,
                       struct hv_err *err)
{
    if (!b->n)
        return 0;
    for (size_t i = 0; i < b->n; i++)
        b->v[i].sym.name = b->names.v + (uintptr_t)b->v[i].sym.name;
    qsort(b->v, b->n, sizeof(*b->v), by_addr);
    /* At most one end marker after each symbol, and one at `end`. */
    struct hvfxt_symbol *out = malloc((2 * b->n + 1) * sizeof(*out));
    if (!out)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    size_t k = 0;
    uint64_t covered = 0; /* the furthest known end of the symbols so far */
    for (size_t i = 0; i < b->n; i++) {
        out[k++] = b->v[i].sym;
        if (b->v[i].end > covered)
            covered = b->v[i].end;
        /* A gap before the next symbol (or the end) that no known size covers: code there
         * belongs to no symbol. Unknown sizes (0) extend to the next symbol, as before. */
        uint64_t next = i + 1 < b->n ? b->v[i + 1].sym.addr : (end ? end : UINT64_MAX);
        if (covered > b->v[i].sym.addr && covered < next)
            out[k++] = (struct hvfxt_symbol){.addr = covered, .type = 0, .name = "", .name_len = 0};
    }
    if (end && (!k || out[k - 1].addr < end))
        out[k++] = (struct hvfxt_symbol){.addr = end, .type = 0, .name = "", .name_len = 0};
    int rc = hvfxt_write_symbols(w, id, out, k, err);
    free(out);
    return rc;
}

void symbol_batch_free(struct symbol_batch *b)
{
    vec_free(b);
    vec_free(&b->names);
    *b = (struct symbol_batch){0};
}
