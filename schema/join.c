#include "schema/join.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

struct hvfxt_join_pending {
    struct hvfxt_join_sample s; /* s.addr/s.flags owned; NULL once emitted */
    uint32_t next;              /* the next pending record of the same id (or free slot), NONE */
    uint64_t seq;               /* its place in the file order */
};

/* The pending records of one id, in file order (head .. tail through `next`). */
struct hvfxt_join_chain {
    uint64_t id;
    uint32_t head, tail; /* NONE: none waiting */
};

struct hvfxt_join_done {
    uint64_t id; /* 0 = empty */
    uint64_t *addr;
    uint32_t *flags;
    uint32_t n;
};

static size_t done_slot(uint64_t id)
{
    return (size_t)((id ^ (id >> 56) * 0x9e3779b97f4a7c15ull) & (HVFXT_JOIN_RECENT - 1));
}

/* Owned copies of n frames (n may be 0); false when out of memory. */
static bool copy_frames(const uint64_t *addr, const uint32_t *flags, uint32_t n, uint64_t **a,
                        uint32_t **f)
{
    *a = malloc(((size_t)n + 1) * sizeof(**a));
    *f = malloc(((size_t)n + 1) * sizeof(**f));
    if (!*a || !*f) {
        free(*a);
        free(*f);
        *a = NULL;
        *f = NULL;
        return false;
    }
    if (n) {
        memcpy(*a, addr, n * sizeof(**a));
        memcpy(*f, flags, n * sizeof(**f));
    }
    return true;
}

int hvfxt_join_init(struct hvfxt_join *j, hvfxt_join_fn emit, void *ctx, struct hv_err *err)
{
    memset(j, 0, sizeof(*j));
    hashidx_init(&j->chain_ids);
    j->free_pend = NONE;
    j->emit = emit;
    j->ctx = ctx;
    j->recent = calloc(HVFXT_JOIN_RECENT, sizeof(*j->recent));
    if (!j->recent)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    return 0;
}

void hvfxt_join_free(struct hvfxt_join *j)
{
    for (size_t i = 0; i < j->pend.n; i++) {
        free((void *)j->pend.v[i].s.addr);
        free((void *)j->pend.v[i].s.flags);
    }
    vec_free(&j->pend);
    if (j->recent) {
        for (size_t i = 0; i < HVFXT_JOIN_RECENT; i++) {
            free(j->recent[i].addr);
            free(j->recent[i].flags);
        }
        free(j->recent);
    }
    vec_free(&j->chains);
    hashidx_free(&j->chain_ids);
    memset(j, 0, sizeof(*j));
}

struct chain_key {
    const struct hvfxt_join *j;
    uint64_t id;
};

static bool chain_eq(const void *ctx, uint32_t idx)
{
    const struct chain_key *k = ctx;
    return k->j->chains.v[idx].id == k->id;
}

/* The chain of `id`; created when `create` (*created says so). NULL if none (or out of
 * memory). */
static struct hvfxt_join_chain *chain_of(struct hvfxt_join *j, uint64_t id, bool create,
                                         bool *created)
{
    *created = false;
    struct chain_key k = {j, id};
    uint64_t h = hashidx_u64(HASHIDX_SEED, id);
    uint32_t i = hashidx_find(&j->chain_ids, h, chain_eq, &k);
    if (i != HASHIDX_NONE)
        return &j->chains.v[i];
    if (!create || !vec_reserve(&j->chains, 1))
        return NULL;
    if (hashidx_insert(&j->chain_ids, h, (uint32_t)j->chains.n) < 0)
        return NULL;
    j->chains.v[j->chains.n] = (struct hvfxt_join_chain){id, NONE, NONE};
    *created = true;
    return &j->chains.v[j->chains.n++];
}

/* The user frames a partial record gets from a completion: without the completion's first
 * frame when the record has the user pc of kernel entry already. */
static int emit_joined(struct hvfxt_join *j, const struct hvfxt_join_sample *s,
                       const uint64_t *addr, const uint32_t *flags, uint32_t n, struct hv_err *err)
{
    uint32_t skip = s->entry_pc && n > 0 ? 1 : 0;
    return j->emit(j->ctx, s, addr + skip, flags + skip, n - skip, err);
}

int hvfxt_join_partial(struct hvfxt_join *j, uint64_t id, const struct hvfxt_join_sample *s,
                       struct hv_err *err)
{
    const struct hvfxt_join_done *d = &j->recent[done_slot(id)];
    if (d->id && d->id == id) /* completed already (another vCPU's stream) */
        return emit_joined(j, s, d->addr, d->flags, d->n, err);
    if (j->pend.n >= NONE - 1)
        return hv_errk(err, HV_ERR_LIMIT, "more than 2^32 partial records");
    bool created;
    struct hvfxt_join_chain *c = chain_of(j, id, true, &created);
    if (!c || (j->free_pend == NONE && !vec_reserve(&j->pend, 1)))
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    struct hvfxt_join_pending pd = {.s = *s, .next = NONE, .seq = j->seq++};
    uint64_t *a;
    uint32_t *f;
    if (!copy_frames(s->addr, s->flags, s->n, &a, &f))
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    pd.s.addr = a;
    pd.s.flags = f;
    uint32_t at = j->free_pend;
    if (at != NONE)
        j->free_pend = j->pend.v[at].next;
    else
        at = (uint32_t)j->pend.n++;
    if (c->tail == NONE) {
        c->head = at;
        if (!created && j->dead_chains)
            j->dead_chains--; /* a chain emptied before, waiting again */
    } else {
        j->pend.v[c->tail].next = at;
    }
    c->tail = at;
    j->pend.v[at] = pd;
    return 0;
}

/* The chains with records waiting, the others dropped (their ids are done: a later partial
 * record of one, rare, starts a chain again), and the index rebuilt. */
static int drop_dead_chains(struct hvfxt_join *j, struct hv_err *err)
{
    size_t o = 0;
    for (size_t i = 0; i < j->chains.n; i++)
        if (j->chains.v[i].head != NONE)
            j->chains.v[o++] = j->chains.v[i];
    j->chains.n = o;
    j->dead_chains = 0;
    hashidx_free(&j->chain_ids);
    hashidx_init(&j->chain_ids);
    for (size_t i = 0; i < o; i++)
        if (hashidx_insert(&j->chain_ids, hashidx_u64(HASHIDX_SEED, j->chains.v[i].id),
                           (uint32_t)i) < 0)
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    return 0;
}

int hvfxt_join_complete(struct hvfxt_join *j, uint64_t id, const uint64_t *addr,
                        const uint32_t *flags, uint32_t n, struct hv_err *err)
{
    j->completions++;
    bool created;
    struct hvfxt_join_chain *c = chain_of(j, id, false, &created);
    for (uint32_t i = c ? c->head : NONE; i != NONE;) {
        struct hvfxt_join_pending *pd = &j->pend.v[i];
        if (emit_joined(j, &pd->s, addr, flags, n, err) < 0)
            return -1;
        pd = &j->pend.v[i]; /* the callback does not add to the join, but be plain about it */
        free((void *)pd->s.addr);
        free((void *)pd->s.flags);
        pd->s.addr = NULL;
        pd->s.flags = NULL;
        uint32_t next = pd->next;
        pd->next = j->free_pend; /* its slot is the next record's */
        j->free_pend = i;
        i = next;
    }
    if (c && c->head != NONE) {
        c->head = c->tail = NONE;
        j->dead_chains++;
    }
    if (j->dead_chains > 4096 && j->dead_chains * 2 > j->chains.n && drop_dead_chains(j, err) < 0)
        return -1;
    /* Kept for partial records of other vCPU streams that come later in the file. */
    struct hvfxt_join_done *d = &j->recent[done_slot(id)];
    free(d->addr);
    free(d->flags);
    memset(d, 0, sizeof(*d));
    if (!copy_frames(addr, flags, n, &d->addr, &d->flags))
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    d->id = id;
    d->n = n;
    return 0;
}

static int by_seq(const void *a, const void *b, void *ctx)
{
    const struct hvfxt_join *j = ctx;
    uint64_t x = j->pend.v[*(const uint32_t *)a].seq, y = j->pend.v[*(const uint32_t *)b].seq;
    return x < y ? -1 : x > y;
}

int hvfxt_join_flush(struct hvfxt_join *j, struct hv_err *err)
{
    /* In file order: the slots were reused out of it. */
    uint32_t *order = malloc((j->pend.n + 1) * sizeof(*order));
    if (!order)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < j->pend.n; i++)
        if (j->pend.v[i].s.addr)
            order[n++] = (uint32_t)i;
    qsort_r(order, n, sizeof(*order), by_seq, j);
    for (size_t k = 0; k < n; k++) {
        struct hvfxt_join_pending *pd = &j->pend.v[order[k]];
        if (j->emit(j->ctx, &pd->s, NULL, NULL, 0, err) < 0) {
            free(order);
            return -1;
        }
        j->unjoined++;
        free((void *)pd->s.addr);
        free((void *)pd->s.flags);
        pd->s.addr = NULL;
        pd->s.flags = NULL;
    }
    free(order);
    return 0;
}
