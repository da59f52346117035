/* The off-cpu source on its own (sampler/sources/off_cpu/): a scripted OS layer lists the
 * guest's threads as the Linux layer does; the records it writes (after the pass's names) are
 * read back from the fake's file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_off_cpu;

static struct guestos_thread threads[2];
static unsigned nthreads, lists;

static long scripted_threads(struct guestos *os, const struct gmem *mem, guestos_thread_fn fn,
                             void *ctx, size_t max, struct hv_err *err)
{
    (void)os, (void)mem, (void)err;
    lists++;
    size_t n = nthreads < max ? nthreads : max;
    for (size_t i = 0; i < n; i++)
        if (fn(ctx, &threads[i]))
            break;
    return (long)n;
}

static struct guestos_ops ops;
static struct gmem no_ram;

/* The off-CPU time of each sample record in the file, summed, and how many there are. */
struct off_sum {
    uint64_t ns;
    unsigned records;
};

static void add_off(void *ctx, const struct hvfxt_record *x)
{
    struct off_sum *o = ctx;
    if (x->kind == HVFXT_REC_SAMPLE && (x->u.sample.fields & HVFXT_SF_OFF_CPU_NS)) {
        o->ns += x->u.sample.off_cpu_ns;
        o->records++;
    }
}

static uint64_t off_ns_in_file(struct fake_env *f, unsigned *records)
{
    struct off_sum o = {0};
    fake_env_each(f, add_off, &o);
    *records = o.records;
    return o.ns;
}

/* Not before the kernel is described (the summary says why); then, at 10 visits a second, a
 * thread that sleeps on gets the visits' intervals, less the CPU time the guest counted for it
 * (none here), written when the recording ends; records wait for REC_STAGE_NAMED. A thread
 * that runs at every visit has no off-CPU time. */
static void test_off_cpu_time(void **state)
{
    (void)state;
    struct fake_env f;
    fake_env_init(&f, 1);
    assert_false(rec_source_off_cpu.wanted(&f.cfg));
    f.cfg.off_cpu_hz = 10;
    assert_true(rec_source_off_cpu.wanted(&f.cfg));
    ops = *f.os.ops;
    ops.threads = scripted_threads;
    f.os.ops = &ops;
    f.env.mem = &no_ram;
    fake_env_create(&f, &rec_source_off_cpu, false);
    threads[0] = (struct guestos_thread){
        .handle = 0x1000,
        .task = {.known = true, .pid = 10, .tid = 10, .comm = "sleeper"},
        .proc_key = 0x10,
        .thread_key = 0x10,
        .state = GUESTOS_THREAD_SLEEPING,
        .cpu = 0,
        .switches = 5,
        .resume_sp = 0xffffc90000001f00,
    };
    threads[1] = (struct guestos_thread){
        .handle = 0x2000,
        .task = {.known = true, .pid = 11, .tid = 11, .comm = "spinner"},
        .proc_key = 0x11,
        .thread_key = 0x11,
        .state = GUESTOS_THREAD_RUNNABLE,
        .on_cpu = true,
        .cpu = 0,
    };
    nthreads = 2;
    const uint64_t t = 1000000000ull;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_VISIT, t, false), 0);
    assert_int_equal(lists, 0);
    char summary[2048];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "off-CPU: no visits: the guest kernel was not described"));
    f.kernel.state = REC_KERNEL_FOUND;
    for (unsigned i = 0; i < 3; i++) {
        threads[1].cpu_ns += 100000000ull; /* the spinner ran the whole interval */
        threads[1].switches++;
        assert_int_equal(fake_env_poll(&f, REC_STAGE_VISIT, t + i * 100000000ull, i == 2), 0);
        assert_int_equal(fake_env_poll(&f, REC_STAGE_NAMED, t + i * 100000000ull, i == 2), 0);
    }
    assert_int_equal(lists, 3);
    unsigned records;
    assert_int_equal(off_ns_in_file(&f, &records), 200000000ull);
    assert_int_equal(records, 1);
    /* The state names, once (the frame a report puts at an off-CPU stack's leaf). */
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 1);
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "off-CPU: 3 visits of the guest's threads at 10 Hz (2 threads "
                                    "each), 1 records of 0.200 s off-CPU"));
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_cpu_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
