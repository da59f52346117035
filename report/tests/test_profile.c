/* The profile model: symbolization with return-address semantics, fallbacks that keep every
 * frame, module renaming from the symbol file, process naming, filters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "report/profile.h"
#include "report/report.h"
#include "synth.h"
#include "testutil.h"

static const char *frame_func(const struct profile *p, size_t s, uint32_t f)
{
    const struct prof_sample *sm = &p->samples.v[s];
    assert_true(f < sm->nframes);
    const struct prof_frame *fr = &p->frames.v[sm->first + f];
    assert_true(fr->loc < p->locs.n);
    return p->funcs.v[p->locs.v[fr->loc].func].name;
}

static void test_symbolize(void **state)
{
    (void)state;
    struct profile p;
    size_t n = synth_profile(&p);
    assert_int_equal(p.samples.n, n);
    /* Hot stack: leaf first. */
    assert_string_equal(frame_func(&p, 0, 0), "fixture_leaf");
    assert_string_equal(frame_func(&p, 0, 1), "fixture_middle");
    assert_string_equal(frame_func(&p, 0, 2), "fixture_outer");
    assert_string_equal(frame_func(&p, 0, 3), "fixture_main");
    assert_string_equal(frame_func(&p, 0, 4), "_start");
    /* "warm" leaf is mid+1 as an exact pc. */
    assert_string_equal(frame_func(&p, 60, 0), "fixture_middle");
    /* Unresolved but mapped: module+offset, with the module renamed from its symbol file. */
    assert_string_equal(frame_func(&p, 85, 0), "prog_static+0x40f000");
    assert_string_equal(p.modules.v[0].name, "prog_static");
    /* Unmapped: the raw address. */
    assert_string_equal(frame_func(&p, 90, 0), "0x7fff12340000");
    /* Kernel frames via kallsyms (no recorded kernel module: covers every kernel frame). */
    assert_string_equal(frame_func(&p, 94, 0), "do_syscall_64");
    assert_string_equal(frame_func(&p, 94, 1), "entry_SYSCALL_64");
    /* Processes without a recorded name are named from their main module. */
    assert_string_equal(profile_process_name(&p, SYNTH_PID), "prog_static");
    assert_string_equal(profile_thread_name(&p, SYNTH_PID, SYNTH_TID), "worker-1");
    assert_string_equal(profile_process_name(&p, 0x10000000), "pid 0"); /* koid - base */
    /* Locations are shared: the hot stack's 5 frames are 5 locations for 60 samples. */
    assert_true(p.locs.n < 20);
    profile_free(&p);
}

static void test_return_address_boundary_in_profile(void **state)
{
    (void)state;
    struct profile p;
    profile_init(&p);
    const char *exe = fixture("prog_static");
    int mod = profile_add_module(&p, exe, NULL, 0, false, NULL);
    assert_true(profile_add_mapping(&p, 7, 0x400000, 0x10000, 0, 0, (uint32_t)mod, NULL) >= 0);
    uint64_t next = nm_address(exe, "fixture_next_function");
    /* Same address twice: as the exact pc it is the next function, as a return address the
     * caller whose last instruction is the call. */
    uint64_t a[] = {next, next};
    assert_true(
        profile_add_sample(
            &p,
            &(struct prof_sample_in){
                .ts = 0, .vcpu = 0, .pid = 7, .tid = 7, .cpl = 3, .addrs = a, .n = 2, .weight = 1},
            NULL) >= 0);
    struct symbol_path sp;
    symbol_path_init(&sp);
    assert_int_equal(profile_load_symbols(&p, &sp, NULL, NULL), 0); /* by its recorded path */
    symbol_path_free(&sp);
    assert_int_equal(profile_symbolize(&p, NULL, NULL, NULL), 0);
    assert_string_equal(frame_func(&p, 0, 0), "fixture_next_function");
    assert_string_equal(frame_func(&p, 0, 1), "fixture_calls_at_end");
    assert_int_equal(p.locs.n, 2); /* the RA flag is part of the location key */
    assert_int_equal(p.locs.v[p.frames.v[1].loc].func_off, 5);
    profile_free(&p);
}

static void test_kaslr_slide_applied(void **state)
{
    (void)state;
    struct profile p;
    profile_init(&p);
    p.kernel_lstar = 0xffffffff81400000ull + 0x2a00000; /* entry_SYSCALL_64 + slide */
    uint64_t a[] = {0xffffffff81200010ull + 0x2a00000};
    assert_true(
        profile_add_sample(
            &p,
            &(struct prof_sample_in){
                .ts = 0, .vcpu = 0, .pid = 1, .tid = 1, .cpl = 0, .addrs = a, .n = 1, .weight = 1},
            NULL) >= 0);
    char ks[4096];
    snprintf(ks, sizeof(ks), "%s/kallsyms.txt", FIXTURE_SRC);
    assert_int_equal(profile_set_kernel_symbols(&p, ks, NULL), 0);
    assert_int_equal(profile_symbolize(&p, NULL, NULL, NULL), 0);
    assert_string_equal(frame_func(&p, 0, 0), "do_syscall_64");
    assert_int_equal(p.locs.v[0].func_off, 0x10);
    profile_free(&p);
}

static void test_filters(void **state)
{
    (void)state;
    struct profile p;
    size_t n = synth_profile(&p);
    struct prof_filter f = {.kernel_only = true};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 6);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){.user_only = true, .nvcpus = 1, .vcpus = {1}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 30 + 5 + 4);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){.npids = 1, .pids = {SYNTH_PID2}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 9);
    assert_int_equal(profile_total_weight(&p), 9);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){.npids = 1, .pids = {2}}; /* no guest pids: koid base + 2 */
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 9);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){.ncomms = 1, .comms = {"worker-1"}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 85);
    profile_free(&p);
    /* A time window: one sample a millisecond from 1 s on (synth.c); relative to the first
     * sample when the recording has no session_start marker, or as absolute timestamps. */
    synth_profile(&p);
    f = (struct prof_filter){.has_time = true, .time_from = 0.010, .time_to = 0.020};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 10);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){
        .has_time = true, .time_absolute = true, .time_from = 1.0, .time_to = -1};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, n);
    profile_free(&p);
    synth_profile(&p);
    p.start_ts = 1000000000ull - 5000000; /* a marker 5 ms before the first sample */
    f = (struct prof_filter){.has_time = true, .time_from = -1, .time_to = 0.007};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 2);
    profile_free(&p);
    (void)n;
}

/* Lists and repeated filters add up within a kind (--vcpu 0,1 is every vCPU), kinds together
 * narrow; names match exactly, as globs, or as the kernel's 15-character cut of a longer one;
 * and an empty result says which filter emptied it. */
static void test_filter_lists(void **state)
{
    (void)state;
    struct profile p;
    size_t n = synth_profile(&p);
    struct prof_filter f = {.nvcpus = 2, .vcpus = {0, 1}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, n);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){.npids = 3, .pids = {SYNTH_PID, SYNTH_PID2, 0x10000000}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, n);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){.ncomms = 1, .comms = {"worker-*"}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 85);
    profile_free(&p);
    synth_profile(&p);
    assert_int_equal(profile_set_name(&p, SYNTH_PID, SYNTH_TID, "a_long_program_", -1, NULL), 0);
    f = (struct prof_filter){.ncomms = 1, .comms = {"a_long_program_name"}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 85);
    profile_free(&p);
    /* "worker" alone is no name of the recording: nothing kept, and the reason names it. */
    synth_profile(&p);
    char why[512];
    f = (struct prof_filter){.ncomms = 1, .comms = {"worker"}};
    profile_filter_explain(&p, &f, why, sizeof(why));
    assert_non_null(strstr(why, "--comm worker: no thread or process"));
    assert_non_null(strstr(why, "worker-1"));
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 0);
    profile_free(&p);
    synth_profile(&p);
    f = (struct prof_filter){.has_time = true, .time_from = 100, .time_to = -1};
    profile_filter_explain(&p, &f, why, sizeof(why));
    assert_non_null(
        strstr(why, "--time: the window holds no sample; the recording's samples span"));
    f = (struct prof_filter){.nvcpus = 1, .vcpus = {7}};
    profile_filter_explain(&p, &f, why, sizeof(why));
    assert_non_null(strstr(why, "--vcpu 7: no sample of that vCPU (the recording's are 0-1)"));
    /* worker-1's samples are all user-mode ones, the kernel's another process's. */
    f = (struct prof_filter){.ncomms = 1, .comms = {"worker-1"}, .kernel_only = true};
    profile_filter_explain(&p, &f, why, sizeof(why));
    assert_non_null(strstr(why, "each filter keeps samples, but no sample passes all of them"));
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 0);
    profile_free(&p);
}

/* A recording with the guest's own pids and tids (a Linux guest): they are what the report
 * shows and what --pid/--tid select; koids still select too; a later name replaces the first. */
static void test_guest_ids(void **state)
{
    (void)state;
    struct profile p;
    synth_profile(&p);
    assert_int_equal(profile_shown_pid(&p, SYNTH_PID), 1); /* none recorded yet: koid - base */
    assert_int_equal(profile_set_name(&p, SYNTH_PID, 0, "sh", 812, NULL), 0);
    assert_int_equal(profile_set_name(&p, SYNTH_PID, 0, "hv_threads", -1, NULL), 0);
    assert_int_equal(profile_set_name(&p, SYNTH_PID, SYNTH_TID, "worker-1", 813, NULL), 0);
    assert_true(p.guest_ids);
    assert_string_equal(profile_process_name(&p, SYNTH_PID), "hv_threads");
    assert_int_equal(profile_shown_pid(&p, SYNTH_PID), 812);
    assert_int_equal(profile_shown_tid(&p, SYNTH_PID, SYNTH_TID), 813);
    assert_int_equal(profile_shown_pid(&p, SYNTH_PID2), SYNTH_PID2);
    struct prof_filter f = {.npids = 1, .pids = {812}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 85);
    f = (struct prof_filter){.ntids = 1, .tids = {813}};
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 85);
    f = (struct prof_filter){.npids = 1, .pids = {2}}; /* guest pids exist: 2 is a guest pid */
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 0);
    profile_free(&p);
    synth_profile(&p);
    assert_int_equal(profile_set_name(&p, SYNTH_PID, 0, "hv_threads", 812, NULL), 0);
    f = (struct prof_filter){.npids = 1, .pids = {SYNTH_PID2}}; /* a koid */
    profile_filter(&p, &f);
    assert_int_equal(p.samples.n, 9);
    profile_free(&p);
}

/* A C++ program's frames (symbolize/tests/fixtures/cxx.cc, by g++): named as perf and c++filt
 * print them, the flame graph's and table's form without the parameter list, and with
 * --no-demangle as the symbol table holds them. */
static struct profile cxx_profile(bool no_demangle, char *folded, size_t len)
{
    struct profile p;
    profile_init(&p);
    p.no_demangle = no_demangle;
    const char *exe = fixture("prog_cxx");
    uint8_t id[ELF_BUILD_ID_MAX];
    assert_int_equal(elf_read_build_id_file(exe, id, NULL), 20);
    int mod = profile_add_module(&p, "prog_cxx", id, 20, false, NULL);
    assert_true(mod >= 0);
    assert_true(profile_add_mapping(&p, SYNTH_PID, 0x400000, 0x10000, 0, 0, (uint32_t)mod, NULL) >=
                0);
    uint64_t helper =
        nm_address(exe, "_ZN3jvm9JavaCalls11call_helperEPNS_9JavaValueERKiPNS_6ThreadE");
    uint64_t entry = nm_address(exe, "_ZL19thread_native_entryPN3jvm6ThreadE");
    uint64_t stack[] = {helper + 1, entry + 5, nm_address(exe, "_start") + 5};
    assert_true(profile_add_sample(&p,
                                   &(struct prof_sample_in){.ts = 1,
                                                            .pid = SYNTH_PID,
                                                            .tid = SYNTH_TID,
                                                            .cpl = 3,
                                                            .addrs = stack,
                                                            .n = 3,
                                                            .weight = 1},
                                   NULL) >= 0);
    struct symbol_path sp;
    symbol_path_init(&sp);
    assert_int_equal(symbol_path_add_dir(&sp, FIXTURE_OUT, NULL), 0);
    size_t loaded = 0;
    assert_int_equal(profile_load_symbols(&p, &sp, &loaded, NULL), 0);
    symbol_path_free(&sp);
    assert_int_equal(profile_symbolize(&p, NULL, NULL, NULL), 0);
    FILE *f = fmemopen(folded, len, "w");
    assert_non_null(f);
    assert_int_equal(report_write(REPORT_FOLDED, &p, NULL, f, NULL), 0);
    fclose(f);
    return p;
}

static void test_demangled_names(void **state)
{
    (void)state;
    char folded[1024];
    struct profile p = cxx_profile(false, folded, sizeof(folded));
    assert_string_equal(frame_func(&p, 0, 0),
                        "jvm::JavaCalls::call_helper(jvm::JavaValue*, int const&, jvm::Thread*)");
    assert_string_equal(frame_func(&p, 0, 1), "thread_native_entry(jvm::Thread*)");
    assert_non_null(strstr(folded, ";_start;thread_native_entry;jvm::JavaCalls::call_helper 1\n"));
    profile_free(&p);
    p = cxx_profile(true, folded, sizeof(folded));
    assert_string_equal(frame_func(&p, 0, 0),
                        "_ZN3jvm9JavaCalls11call_helperEPNS_9JavaValueERKiPNS_6ThreadE");
    profile_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize),
        cmocka_unit_test(test_return_address_boundary_in_profile),
        cmocka_unit_test(test_kaslr_slide_applied),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_filter_lists),
        cmocka_unit_test(test_demangled_names),
        cmocka_unit_test(test_guest_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
