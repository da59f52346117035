/* The recorder source "containers" (docs/containers.md): every sample carries the number of
 * its thread's control group (the exit path looks the task's css_set up in the group table this
 * source publishes), and this source writes each number's record, the cgroup's path read from
 * the guest kernel's memory, before the first sample that carries it (its visit of the ring's
 * records, and each pass for the records other sources write: off-CPU time).
 *
 * Each pass it also re-reads a share of the groups' paths (every group about once a second):
 * a css_set the guest kernel freed and whose memory holds another one now reads as another
 * path, and its slot gets a new number, so samples from then on are attributed to the new
 * cgroup while the old number keeps what it said. Slots unused for a minute are freed.
 *
 * The container of a path is the report's to tell (common/container_id.h); this source counts
 * them for its summary line only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/container_id.h"
#include "common/vector.h"
#include "guestos/guestos.h"
#include "sampler/exit/core.h"
#include "sampler/exit/group_table.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

#define PATH_MAX_LEN   1024                  /* guestos/linux/cgroup.h LX_CGROUP_PATH_MAX */
#define RECHECK_NS     1000000000ull         /* every group's path read again about once a second */
#define UNUSED_NS      60000000000ull        /* a slot no sample used for a minute is freed */
#define RECORD_COST(n) (48u + (uint64_t)(n)) /* a kernel object record with an n-byte name */
#define SUMMARY_MAX    16                    /* containers the summary names */
#define UNREADABLE     "[unreadable cgroup]"

/* What the drain thread knows of a slot: the number it wrote a record for, and that path. */
struct slot_seen {
    uint32_t number;
    uint64_t path_hash;
    uint64_t checked_ns;
};

struct seen_container {
    struct container_id c;
    uint64_t groups;
};

struct containers {
    struct group_table *table;
    VECTOR(uint8_t) written; /* by number: its record was written (or left out, counted) */
    struct slot_seen seen[GROUP_TABLE_SLOTS];
    uint32_t sweep; /* the next slot the re-check looks at */
    uint64_t sweep_ns;
    uint64_t records, unreadable, renumbered, freed, cut;
    struct seen_container ct[SUMMARY_MAX];
    unsigned nct;
    uint64_t more_containers;
};

static uint64_t hash_path(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return h;
}

static void count_container(struct containers *c, const char *path)
{
    struct container_id id;
    if (!container_from_cgroup(path, strlen(path), &id) || !id.id[0])
        return;
    for (unsigned i = 0; i < c->nct; i++)
        if (c->ct[i].c.engine == id.engine && !strcmp(c->ct[i].c.id, id.id)) {
            c->ct[i].groups++;
            return;
        }
    if (c->nct == SUMMARY_MAX) {
        c->more_containers++;
        return;
    }
    c->ct[c->nct++] = (struct seen_container){id, 1};
}

/* The path of slot i's key now ("[unreadable cgroup]" when it cannot be read). */
static const char *read_path(const struct rec_env *env, uint64_t key, char *buf, size_t len,
                             bool *ok)
{
    *ok = env->mem && guestos_group_path(env->os, env->mem, key, buf, len) > 0;
    return *ok ? buf : UNREADABLE;
}

static bool mark_written(struct containers *c, uint32_t number)
{
    while (c->written.n <= number) {
        uint8_t *slot = vec_push(&c->written);
        if (!slot)
            return false;
        *slot = 0;
    }
    c->written.v[number] = 1;
    return true;
}

static bool is_written(const struct containers *c, uint32_t number)
{
    return number < c->written.n && c->written.v[number];
}

static int write_record(struct containers *c, const struct rec_env *env, uint32_t i,
                        uint32_t number, uint64_t now, struct hv_err *err)
{
    char buf[PATH_MAX_LEN + 1];
    bool ok;
    uint64_t key = atomic_load_explicit(&c->table->slot[i].key, memory_order_acquire);
    const char *path = read_path(env, key, buf, sizeof(buf), &ok);
    if (!mark_written(c, number))
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for %" PRIu32 " group numbers",
                       number);
    c->seen[i] = (struct slot_seen){number, hash_path(path), now};
    if (!meta_budget_allows(env->meta, RECORD_COST(strlen(path)))) {
        c->cut++;
        return 0;
    }
    if (hvfxt_write_group(env->w, number, path, err) < 0)
        return -1;
    c->records++;
    c->unreadable += !ok;
    if (ok)
        count_container(c, path);
    return 0;
}

/* Every number the table gave that has no record yet. */
static int write_new(struct containers *c, const struct rec_env *env, uint64_t now,
                     struct hv_err *err)
{
    for (uint32_t i = 0; i < GROUP_TABLE_SLOTS; i++) {
        uint32_t num = atomic_load_explicit(&c->table->slot[i].number, memory_order_acquire);
        if (num && !is_written(c, num) && write_record(c, env, i, num, now, err) < 0)
            return -1;
    }
    return 0;
}

/* A share of the slots each pass: each group's path read again about once a second, and a
 * slot no sample used for a minute freed. */
static int recheck(struct containers *c, const struct rec_env *env, uint64_t now,
                   struct hv_err *err)
{
    uint64_t since = c->sweep_ns && now > c->sweep_ns ? now - c->sweep_ns : RECHECK_NS;
    c->sweep_ns = now;
    uint64_t share =
        since >= RECHECK_NS ? GROUP_TABLE_SLOTS : (GROUP_TABLE_SLOTS * since) / RECHECK_NS + 1;
    for (uint64_t n = 0; n < share && rec_may_work(env); n++) {
        uint32_t i = c->sweep;
        c->sweep = (c->sweep + 1) % GROUP_TABLE_SLOTS;
        struct group_slot *s = &c->table->slot[i];
        uint64_t key = atomic_load_explicit(&s->key, memory_order_acquire);
        uint32_t num = atomic_load_explicit(&s->number, memory_order_acquire);
        if (!key || !num || !is_written(c, num) || c->seen[i].number != num)
            continue;
        uint64_t used = atomic_load_explicit(&s->used_ns, memory_order_relaxed);
        if (now > used + UNUSED_NS) {
            group_table_free(c->table, i);
            c->freed++;
            continue;
        }
        char buf[PATH_MAX_LEN + 1];
        bool ok;
        const char *path = read_path(env, key, buf, sizeof(buf), &ok);
        c->seen[i].checked_ns = now;
        if (!ok || hash_path(path) == c->seen[i].path_hash)
            continue; /* the same cgroup (or not readable now: keep what it was) */
        uint32_t fresh = group_table_renumber(c->table, i);
        c->renumbered++;
        if (write_record(c, env, i, fresh, now, err) < 0)
            return -1;
    }
    return 0;
}

static int containers_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    struct containers *c = calloc(1, sizeof(*c));
    if (c)
        c->table = calloc(1, sizeof(*c->table));
    if (!c || !c->table) {
        free(c);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for the group table");
    }
    env->core->groups = c->table; /* the exit path looks samples' groups up from here on */
    *st = c;
    return 0;
}

static int containers_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                           bool final, struct hv_err *err)
{
    (void) final;
    struct containers *c = st;
    if (stage == REC_STAGE_NAMED)
        return write_new(c, env, now, err);
    return recheck(c, env, now, err);
}

/* A ring record about to be written: its group's record first. */
static int containers_visit(void *st, const struct rec_env *env, const uint64_t *rec,
                            uint32_t nwords, struct hv_err *err)
{
    struct containers *c = st;
    uint64_t koid;
    if (!hvfxt_record_word(rec, nwords, HVFXT_SF_CGROUP, &koid) || !hvfxt_koid_is_group(koid))
        return 0;
    uint32_t num = (uint32_t)(koid - HVFXT_KOID_GROUP_BASE);
    return is_written(c, num) ? 0 : write_new(c, env, hv_now_ns(), err);
}

static void containers_summary(const void *st, const struct rec_env *env, FILE *out)
{
    const struct containers *c = st;
    uint64_t full = atomic_load_explicit(&c->table->full, memory_order_relaxed);
    (void)env;
    if (!c->records && !full && !c->cut)
        return; /* a guest whose tasks give no cgroup (not Linux, or no BTF) */
    fprintf(out, "  cgroups: %" PRIu64 " recorded", c->records);
    if (c->nct) {
        fprintf(out, ", %u container%s:", c->nct + (unsigned)c->more_containers,
                c->nct + c->more_containers == 1 ? "" : "s");
        for (unsigned i = 0; i < c->nct; i++) {
            char id[CONTAINER_ID_MAX + 1];
            fprintf(out, "%s %s %s", i ? "," : "", container_engine_name(c->ct[i].c.engine),
                    container_short_id(&c->ct[i].c, id, sizeof(id)));
        }
        if (c->more_containers)
            fprintf(out, ", %" PRIu64 " more", c->more_containers);
    }
    if (c->unreadable)
        fprintf(out, "; %" PRIu64 " path(s) unreadable", c->unreadable);
    if (c->renumbered)
        fprintf(out, "; %" PRIu64 " reused by another cgroup", c->renumbered);
    if (c->freed)
        fprintf(out, "; %" PRIu64 " unused slot(s) freed", c->freed);
    if (full)
        fprintf(out, "; %" PRIu64 " sample(s) without one (table of %u full)", full,
                GROUP_TABLE_SLOTS);
    if (c->cut)
        fprintf(out, "; %" PRIu64 " record(s) left out (metadata budget)", c->cut);
    fprintf(out, "\n");
}

static void containers_destroy(void *st)
{
    struct containers *c = st;
    if (!c)
        return;
    free(c->table);
    vec_free(&c->written);
    free(c);
}

const struct rec_source_ops rec_source_containers = {
    .name = "containers",
    .create = containers_create,
    .stages = REC_STAGE_BIT(REC_STAGE_NAMED) | REC_STAGE_BIT(REC_STAGE_GUEST),
    .poll = containers_poll,
    .visit = containers_visit,
    .summary = containers_summary,
    .destroy = containers_destroy,
};
