/* The kernel source on its own (sampler/sources/kernel/): a scripted OS layer stands for the
 * Linux layer's discovery; what it writes is read back from the fake's recording. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_kernel;

#define KCODE 0xffffffff81000000ull

static const struct guestos_symbol kernel_syms[] = {
    {.addr = KCODE + 0x200000, .name = "schedule", .name_len = 8, .type = 'T'},
    {.addr = KCODE + 0x200800, .name = "do_idle", .name_len = 7, .type = 'T'},
};
static const struct guestos_kernel the_kernel = {
    .release = "6.1.0-test",
    .kaslr_offset = 0x200000,
    .text_start = KCODE + 0x200000,
    .text_end = KCODE + 0x201000,
    .syms = kernel_syms,
    .nsyms = 2,
    .build_id = {0xab, 0xcd},
    .build_id_len = 2,
    .tasks_known = true,
    .tasks = "scripted tasks",
    .how = "scripted",
};
static int discover_rc; /* what the scripted discovery says: 1 found, 0 not yet, -1 never */
static unsigned discovers;
static int panicked_cpu = -1;

static int scripted_discover(struct guestos *os, const struct gmem *mem,
                             const struct guestos_kernel **out, struct hv_err *err)
{
    (void)os, (void)mem;
    discovers++;
    if (discover_rc < 0)
        return hv_errf(err, "scripted: no kernel here");
    *out = discover_rc ? &the_kernel : NULL;
    return discover_rc;
}

static int scripted_panicked(struct guestos *os, const struct gmem *mem)
{
    (void)os, (void)mem;
    return panicked_cpu;
}

static struct guestos_ops ops;
static struct gmem no_ram; /* a gmem without slots: the scripted ops read nothing */

static void setup(struct fake_env *f)
{
    fake_env_init(f, 1);
    ops = *f->os.ops;
    ops.discover_kernel = scripted_discover;
    ops.panicked = scripted_panicked;
    f->os.ops = &ops;
    f->env.mem = &no_ram;
    discovers = 0;
    panicked_cpu = -1;
    fake_env_create(f, &rec_source_kernel, false);
}

/* Found: its module, symbols at link-time addresses and the guest_kernel marker, the
 * description the other sources read; no second discovery. */
static void test_kernel_found(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    discover_rc = 1;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, false), 0);
    assert_int_equal(f.kernel.state, REC_KERNEL_FOUND);
    assert_true(f.kernel.tasks_known);
    assert_int_equal(f.kernel.symbols, 2);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 1);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_SYMBOLS, NULL), 1);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_OTHER, HVFXT_GUEST_KERNEL), 1);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 5000000000ull, true), 0);
    assert_int_equal(discovers, 1);
    char summary[2048];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "guest kernel: Linux 6.1.0-test, KASLR offset 0x200000, 2 "
                                    "code symbols in the recording; scripted"));
    assert_non_null(strstr(summary, "guest tasks: pid, tid and name of every stop"));
    fake_env_fini(&f);
}

/* Not found yet: looks spaced out (250 ms, then half as long again each time), none while the
 * pass's slice is spent, one at the end; the summary says what was looked for. */
static void test_kernel_searching(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    discover_rc = 0;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000000000ull, false), 0);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1100000000ull, false), 0);
    assert_int_equal(discovers, 1);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1300000000ull, false), 0);
    assert_int_equal(discovers, 2);
    f.may_work = false;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 9000000000ull, false), 0);
    assert_int_equal(discovers, 2);
    f.may_work = true;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 9000000001ull, true), 0);
    assert_int_equal(discovers, 3);
    assert_int_equal(f.kernel.state, REC_KERNEL_SEARCHING);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 0);
    char summary[2048];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "not described: no VMCOREINFO in guest memory after 3 looks"));
    fake_env_fini(&f);
}

/* A kernel the OS layer cannot describe: the recording goes on, the summary says why. */
static void test_kernel_failed(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    discover_rc = -1;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, false), 0);
    assert_int_equal(f.kernel.state, REC_KERNEL_FAILED);
    char summary[2048];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "not described: scripted: no kernel here"));
    fake_env_fini(&f);
}

/* After the rings: the kernel's own panic record is a marker once and the flight recorder's
 * snapshot (asked through the core), but not at the end (the file is that). */
static void test_kernel_panic(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f);
    discover_rc = 1;
    f.cfg.quiet = true;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, 1000, false), 0);
    assert_int_equal(f.snapshots, 0); /* not described yet: not looked for */
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, false), 0);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, 2000, false), 0);
    assert_int_equal(f.snapshots, 0);
    panicked_cpu = 0;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, 3000, false), 0);
    assert_int_equal(fake_env_poll(&f, REC_STAGE_DRAINED, 4000, false), 0);
    assert_int_equal(f.snapshots, 1);
    assert_string_equal(f.last_snapshot, "panic");
    assert_true(f.kernel.panic_seen);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_OTHER, HVFXT_GUEST_PANIC), 1);
    char summary[2048];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "guest kernel: panicked on CPU 0"));
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_found),
        cmocka_unit_test(test_kernel_searching),
        cmocka_unit_test(test_kernel_failed),
        cmocka_unit_test(test_kernel_panic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
