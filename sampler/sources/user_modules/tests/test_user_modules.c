/* The user-modules source on its own (sampler/sources/user_modules/): first looks at new
 * address spaces, their schedule, and the core's fan-out of what a look found; a synthetic
 * guest's page tables stand for a process (guestwalk's test image). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guestwalk/paging.h"
#include "guestwalk/tests/guest_image.h"
#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_user_modules;

static uint32_t new_proc(struct fake_env *f, uint64_t key, uint64_t cr3)
{
    struct id_proc_info info = {
        .cr0 = PT_CR0_PE | PT_CR0_PG,
        .cr3 = cr3,
        .cr4 = PT_CR4_PAE,
        .efer = PT_EFER_LME | PT_EFER_LMA,
        .first_ts = 1,
    };
    uint32_t id = id_proc_get(f->core.ids, key, &info);
    assert_true(id > 0);
    return id;
}

/* The source on a fake whose guest memory is g's. */
static void setup(struct fake_env *f, struct gimg *g)
{
    assert_int_equal(gimg_init(g, false), 0);
    fake_env_init(f, 1);
    f->env.mem = &g->mem;
    fake_env_create(f, &rec_source_user_modules, false);
}

/* The core's first look at process `proc`, as names.c asks for it. */
static int named(struct fake_env *f, uint32_t proc)
{
    struct hv_err err = {0};
    return rec_source_user_modules.process_named(f->st, &f->env, proc,
                                                 id_proc_at(f->core.ids, proc), &err);
}

/* A kernel thread has no address space to look into; a pass whose slice is spent asks again
 * next pass; a user address space is looked at, and every source sees what it found. */
static void test_first_look(void **state)
{
    (void)state;
    struct gimg g;
    struct fake_env f;
    setup(&f, &g);
    uint32_t kthread = new_proc(&f, 1, 0);
    assert_int_equal(named(&f, kthread), 1);
    assert_int_equal(f.looks, 0);
    uint32_t user = new_proc(&f, 2, g.root);
    f.may_work = false;
    assert_int_equal(named(&f, user), 0);
    assert_int_equal(f.looks, 0);
    f.may_work = true;
    assert_int_equal(named(&f, user), 1);
    assert_int_equal(f.looks, 1);
    assert_int_equal(f.looked_proc, user);
    assert_int_equal(f.looked_n, 0); /* no ELF image mapped in it */
    assert_true(f.looked_began > 0);
    char summary[1024];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "user modules: 0 recorded (0 mappings)"));
    assert_non_null(strstr(summary, "1 looks at address spaces"));
    fake_env_fini(&f);
    gimg_free(&g);
}

/* Looked at again only after it ran user code since the last look, and not before 0.1 s. */
static void test_relooks(void **state)
{
    (void)state;
    struct gimg g;
    struct fake_env f;
    setup(&f, &g);
    uint32_t user = new_proc(&f, 2, g.root);
    assert_int_equal(named(&f, user), 1);
    uint64_t t = hv_now_ns();
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, t + 1000000000ull, false), 0);
    assert_int_equal(f.looks, 1); /* no user code run since */
    id_proc_seen_user(f.core.ids, user, hv_now_ns());
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, hv_now_ns() + 1000000000ull, false), 0);
    assert_int_equal(f.looks, 2);
    id_proc_seen_user(f.core.ids, user, hv_now_ns());
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, hv_now_ns(), false), 0);
    assert_int_equal(f.looks, 2); /* too soon */
    fake_env_fini(&f);
    gimg_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_look),
        cmocka_unit_test(test_relooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
