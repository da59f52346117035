/* The containers source on its own (sampler/sources/containers/): a scripted OS layer gives the
 * guest's cgroup paths by css_set key. Records for every number the table gave, before the
 * samples that carry them (a ring record's visit) and each pass (off-CPU's); a key whose path
 * changed (the kernel reused the css_set) gets a new number and record, the old number keeps
 * its own; unreadable paths, slots unused for a minute, a full table, the summary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/sources/tests/fake_env.h"
#include "schema/encode.h"

extern const struct rec_source_ops rec_source_containers;

#define PODMAN_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define KEY_A     0xffff888001234500ull
#define KEY_B     0xffff888001234600ull
#define KEY_BAD   0xffff888001234700ull
#define S         1000000000ull

static const char *path_a = "/machine.slice/libpod-" PODMAN_ID ".scope";
static const char *path_b = "/system.slice/ssh.service";
static unsigned reads;

static int scripted_group_path(struct guestos *os, const struct gmem *mem, uint64_t group,
                               char *out, size_t len)
{
    (void)os, (void)mem;
    reads++;
    const char *p = group == KEY_A ? path_a : group == KEY_B ? path_b : NULL;
    if (!p)
        return -1;
    return snprintf(out, len, "%s", p);
}

static struct guestos_ops ops;
static struct gmem no_ram;

static void setup(struct fake_env *f)
{
    fake_env_init(f, 1);
    ops = *f->os.ops;
    ops.group_path = scripted_group_path;
    f->os.ops = &ops;
    f->env.mem = &no_ram;
    reads = 0;
    path_a = "/machine.slice/libpod-" PODMAN_ID ".scope";
    fake_env_create(f, &rec_source_containers, false);
    assert_non_null(f->core.groups); /* published to the exit path */
}

struct groups_seen {
    unsigned n;
    uint64_t koid[16];
    char path[16][256];
};

static void on_record(void *ctx, const struct hvfxt_record *x)
{
    struct groups_seen *g = ctx;
    if (x->fxt.type != FXTR_KOBJ || x->fxt.u.kobj.obj_type != 17 || g->n == 16)
        return;
    g->koid[g->n] = x->fxt.u.kobj.koid;
    snprintf(g->path[g->n], sizeof(g->path[0]), "%.*s", (int)x->fxt.u.kobj.name.len,
             x->fxt.u.kobj.name.ptr);
    g->n++;
}

static struct groups_seen groups_in(struct fake_env *f)
{
    struct groups_seen g = {0};
    fake_env_each(f, on_record, &g);
    return g;
}

/* A sample record carrying group number `num`, as a vCPU's ring holds it. */
static size_t sample_with(uint32_t num, uint64_t *buf, size_t cap)
{
    struct hvfxt_sample smp = {
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_CGROUP,
        .pid = hvfxt_koid_guest_process(1),
        .tid = hvfxt_koid_guest_thread(1),
        .ts = 5,
        .cgroup = hvfxt_koid_group(num),
    };
    return hvfxt_enc_sample(buf, cap, &smp);
}

static void test_records_before_samples(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    struct group_table *t = f.core.groups;
    uint32_t a = group_table_number(t, KEY_A, 1 * S);
    assert_int_not_equal(a, 0);
    assert_int_equal(group_table_number(t, KEY_A, 1 * S), a); /* one number a key */
    assert_int_equal(group_table_number(t, 0, 1 * S), 0);     /* no group known */
    /* A ring record's visit writes its group's record first, once. */
    uint64_t rec[64];
    size_t n = sample_with(a, rec, 64);
    assert_true(n > 0);
    uint64_t koid = 0;
    assert_true(hvfxt_record_word(rec, n, HVFXT_SF_CGROUP, &koid));
    assert_int_equal(koid, hvfxt_koid_group(a));
    assert_int_equal(f.ops->visit(f.st, &f.env, rec, (uint32_t)n, &(struct hv_err){0}), 0);
    assert_int_equal(f.ops->visit(f.st, &f.env, rec, (uint32_t)n, &(struct hv_err){0}), 0);
    struct groups_seen g = groups_in(&f);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.koid[0], hvfxt_koid_group(a));
    assert_string_equal(g.path[0], path_a);
    /* A number given between passes (off-CPU's records): written at the named stage. */
    uint32_t b = group_table_number(t, KEY_B, 1 * S);
    assert_int_not_equal(b, a);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_NAMED, 1 * S, false), 0);
    g = groups_in(&f);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.path[1], path_b);
    /* A path that cannot be read is still a record, which says so. */
    uint32_t bad = group_table_number(t, KEY_BAD, 1 * S);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_NAMED, 1 * S, false), 0);
    g = groups_in(&f);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.koid[2], hvfxt_koid_group(bad));
    assert_string_equal(g.path[2], "[unreadable cgroup]");
    char summary[1024];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "cgroups: 3 recorded, 1 container: podman 0123456789ab; "
                                    "1 path(s) unreadable"));
    fake_env_fini(&f);
}

/* The kernel freed the css_set and another cgroup's lives there now: from the re-check on, the
 * key has a new number and record; the old number's record is untouched. */
static void test_reused_key_renumbered(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    struct group_table *t = f.core.groups;
    uint32_t a = group_table_number(t, KEY_A, 1 * S);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_NAMED, 1 * S, false), 0);
    unsigned before = reads;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 2 * S + 1, false), 0);
    assert_true(reads > before); /* read again: the same path, the same number */
    assert_int_equal(group_table_number(t, KEY_A, 2 * S), a);
    path_a = "/machine.slice/libpod-"
             "fedcba9876543210fedcba9876543210fedcba9876543210fedcba98"
             "76543210.scope";
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 3 * S + 2, false), 0);
    uint32_t a2 = group_table_number(t, KEY_A, 3 * S);
    assert_true(a2 > a);
    struct groups_seen g = groups_in(&f);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.koid[0], hvfxt_koid_group(a));
    assert_int_equal(g.koid[1], hvfxt_koid_group(a2));
    assert_string_equal(g.path[1], path_a);
    char summary[1024];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "2 containers: podman 0123456789ab, podman fedcba987654"));
    assert_non_null(strstr(summary, "1 reused by another cgroup"));
    fake_env_fini(&f);
}

/* A slot no sample used for a minute is freed: the key, seen again, is a new number. No re-check
 * while the pass's slice is spent. */
static void test_unused_freed(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    struct group_table *t = f.core.groups;
    uint32_t a = group_table_number(t, KEY_A, 1 * S);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_NAMED, 1 * S, false), 0);
    f.may_work = false;
    unsigned before = reads;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 90 * S, false), 0);
    assert_int_equal(reads, before);
    f.may_work = true;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 91 * S, false), 0);
    uint32_t again = group_table_number(t, KEY_A, 92 * S);
    assert_true(again > a);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_NAMED, 92 * S, false), 0);
    assert_int_equal(groups_in(&f).n, 2);
    char summary[1024];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "1 unused slot(s) freed"));
    fake_env_fini(&f);
}

/* More groups than slots: the rest get no number, counted; the ones in hold theirs. */
static void test_table_full(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    struct group_table *t = f.core.groups;
    unsigned got = 0, none = 0;
    for (uint64_t i = 0; i < GROUP_TABLE_SLOTS + 512; i++) {
        uint32_t n = group_table_number(t, 0xffff888100000000ull + i * 64, 1 * S);
        got += n != 0;
        none += n == 0;
    }
    assert_true(got <= GROUP_TABLE_SLOTS);
    assert_true(none >= 512);
    assert_int_equal(atomic_load(&t->full), none);
    assert_int_equal(group_table_number(t, 0xffff888100000000ull, 1 * S), 1);
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_before_samples),
        cmocka_unit_test(test_reused_key_renumbered),
        cmocka_unit_test(test_unused_freed),
        cmocka_unit_test(test_table_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
