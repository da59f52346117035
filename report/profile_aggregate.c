/* Samples that are the same sample, and stacks that are the same stack (docs/report.md,
 * "Memory"). When a report needs no sample's own time or order (every format but the timeline
 * and perf-script, without --time), the profile keeps one entry per distinct (process, thread,
 * vCPU, ring, stack) with the weight of all, so that its memory grows with distinct stacks, not
 * with samples. When it keeps every sample, samples of one process with the same stack share
 * its frames (a sample is then ~60 bytes, not ~60 + 16 per frame). The indexes here find a
 * sample's entry, or a stack's first sample, by key; profile_add_sample uses them. */
#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"
#include "report/profile.h"
#include "report/profile_priv.h"

static uint64_t stack_hash(const struct prof_sample_in *in, uint64_t h)
{
    h = hashidx_u64(h, in->pid);
    h = hashidx_u64(h, ((uint64_t)in->n << 8) | in->cpl);
    h = hashidx_bytes(h, in->addrs, in->n * sizeof(*in->addrs));
    if (in->flags)
        h = hashidx_bytes(h, in->flags, in->n * sizeof(*in->flags));
    return h;
}

static uint64_t key_hash(const struct prof_sample_in *in)
{
    uint64_t h = hashidx_u64(HASHIDX_SEED, in->tid);
    h = hashidx_u64(h, in->vcpu);
    h = hashidx_u64(h, in->group);
    return stack_hash(in, h);
}

struct key_ctx {
    const struct profile *p;
    const struct prof_sample_in *in;
};

/* Sample idx has the stack of `in` (its process, ring and frames). */
static bool stack_eq(const void *ctx, uint32_t idx)
{
    const struct key_ctx *k = ctx;
    const struct prof_sample *s = &k->p->samples.v[idx];
    const struct prof_sample_in *in = k->in;
    if (s->pid != in->pid || s->cpl != in->cpl || s->nframes != in->n)
        return false;
    uint32_t dk = in->cpl == PROF_CPL_KERNEL ? PROF_FRAME_KERNEL : 0;
    for (uint32_t i = 0; i < in->n; i++) {
        const struct prof_frame *f = &k->p->frames.v[s->first + i];
        uint32_t fl = in->flags ? in->flags[i] : i == 0 ? dk : dk | PROF_FRAME_RA;
        if (f->addr != in->addrs[i] || f->flags != fl)
            return false;
    }
    return true;
}

static bool key_eq(const void *ctx, uint32_t idx)
{
    const struct key_ctx *k = ctx;
    const struct prof_sample *s = &k->p->samples.v[idx];
    return s->tid == k->in->tid && s->vcpu == k->in->vcpu && s->group == k->in->group &&
           stack_eq(ctx, idx);
}

int prof_aggregate_find(const struct profile *p, const struct prof_sample_in *in, uint64_t *hash)
{
    *hash = key_hash(in);
    if (!p->agg_index)
        return -1;
    struct key_ctx k = {p, in};
    uint32_t i = hashidx_find(p->agg_index, *hash, key_eq, &k);
    return i == HASHIDX_NONE ? -1 : (int)i;
}

static int insert(void **index, uint64_t hash, uint32_t idx, struct hv_err *err)
{
    if (!*index) {
        *index = calloc(1, sizeof(struct hashidx));
        if (!*index)
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
        hashidx_init(*index);
    }
    if (hashidx_insert(*index, hash, idx) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    return 0;
}

int prof_aggregate_insert(struct profile *p, uint64_t hash, uint32_t idx, struct hv_err *err)
{
    return insert(&p->agg_index, hash, idx, err);
}

int prof_stack_find(const struct profile *p, const struct prof_sample_in *in, uint64_t *hash)
{
    *hash = stack_hash(in, HASHIDX_SEED);
    if (!p->stack_index)
        return -1;
    struct key_ctx k = {p, in};
    uint32_t i = hashidx_find(p->stack_index, *hash, stack_eq, &k);
    return i == HASHIDX_NONE ? -1 : (int)i;
}

int prof_stack_insert(struct profile *p, uint64_t hash, uint32_t idx, struct hv_err *err)
{
    return insert(&p->stack_index, hash, idx, err);
}

static void index_free(void **index)
{
    if (*index) {
        hashidx_free(*index);
        free(*index);
        *index = NULL;
    }
}

void prof_aggregate_free(struct profile *p)
{
    index_free(&p->agg_index);
    index_free(&p->stack_index);
}
