/* The control groups of a recording (docs/containers.md): each group record's path, the
 * container it names (common/container_id.h: the reader derives it, the recording holds the
 * path), found by koid for the samples that carry it. */
#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"
#include "report/profile.h"
#include "report/profile_priv.h"

struct group_key {
    const struct profile *p;
    uint64_t koid;
};

static bool group_eq(const void *ctx, uint32_t idx)
{
    const struct group_key *k = ctx;
    return k->p->groups.v[idx].koid == k->koid;
}

uint32_t profile_group_of(const struct profile *p, uint64_t koid)
{
    if (!p->group_index || !koid)
        return 0;
    struct group_key k = {p, koid};
    uint32_t i = hashidx_find(p->group_index, hashidx_u64(HASHIDX_SEED, koid), group_eq, &k);
    return i == HASHIDX_NONE ? 0 : i + 1;
}

int profile_add_group(struct profile *p, uint64_t koid, const char *path, struct hv_err *err)
{
    if (!p->group_index) {
        p->group_index = calloc(1, sizeof(struct hashidx));
        if (!p->group_index)
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
        hashidx_init(p->group_index);
    }
    char *copy = prof_dup_printable(path ? path : "");
    if (!copy)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    struct prof_group g = {.koid = koid, .path = copy};
    (void)container_from_cgroup(copy, strlen(copy), &g.ct);
    uint32_t at = profile_group_of(p, koid);
    if (at) {
        free(p->groups.v[at - 1].path);
        p->groups.v[at - 1] = g;
        return 0;
    }
    if (p->groups.n >= UINT32_MAX - 1 || PROF_VEC_RESERVE(p->groups, err) < 0 ||
        hashidx_insert(p->group_index, hashidx_u64(HASHIDX_SEED, koid), (uint32_t)p->groups.n) <
            0) {
        free(copy);
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    }
    p->groups.v[p->groups.n++] = g;
    return 0;
}

const struct prof_group *profile_sample_group(const struct profile *p, const struct prof_sample *s)
{
    return s->group && s->group <= p->groups.n ? &p->groups.v[s->group - 1] : NULL;
}

const char *profile_group_container(const struct prof_group *g, char *buf, size_t len)
{
    if (!g || !g->ct.id[0]) {
        if (len)
            buf[0] = 0;
        return buf;
    }
    return container_short_id(&g->ct, buf, len);
}

void prof_groups_free(struct profile *p)
{
    for (size_t i = 0; i < p->groups.n; i++)
        free(p->groups.v[i].path);
    vec_free(&p->groups);
    if (p->group_index) {
        hashidx_free(p->group_index);
        free(p->group_index);
        p->group_index = NULL;
    }
}
