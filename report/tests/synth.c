#include "synth.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"

size_t synth_profile(struct profile *p)
{
    profile_init(p);
    p->period_ns = 1000000;
    const char *exe = fixture("prog_static");
    uint8_t id[ELF_BUILD_ID_MAX];
    assert_int_equal(elf_read_build_id_file(exe, id, NULL), 20);
    int mod = profile_add_module(p, "[elf@0x400000]", id, 20, false, NULL);
    assert_true(mod >= 0);
    assert_true(profile_add_mapping(p, SYNTH_PID, 0x400000, 0x10000, 0, 0, (uint32_t)mod, NULL) >=
                0);
    assert_true(profile_add_mapping(p, SYNTH_PID2, 0x400000, 0x10000, 0, 0, (uint32_t)mod, NULL) >=
                0);
    profile_set_name(p, SYNTH_PID, SYNTH_TID, "worker-1", -1, NULL);

    uint64_t leaf = nm_address(exe, "fixture_leaf"), mid = nm_address(exe, "fixture_middle");
    uint64_t outer = nm_address(exe, "fixture_outer"), main_ = nm_address(exe, "fixture_main");
    uint64_t start = nm_address(exe, "_start");
    /* Return addresses: a few bytes into each caller (inside the function, as after a call). */
    uint64_t hot[] = {leaf + 2, mid + 9, outer + 9, main_ + 9, start + 5};
    uint64_t warm[] = {mid + 1, outer + 9, main_ + 9, start + 5};
    uint64_t nosym[] = {0x40f000, start + 5}; /* mapped, no symbol: prog_static+0x40f000 */
    uint64_t raw[] = {0x7fff12340000ull};     /* unmapped: raw address */
    uint64_t kern[] = {0xffffffff81200010ull, 0xffffffff81400020ull};
    size_t n = 0;
    for (int i = 0; i < 60; i++, n++)
        assert_true(profile_add_sample(p,
                                       &(struct prof_sample_in){.ts = 1000000000ull + n * 1000000,
                                                                .vcpu = (uint32_t)(i & 1),
                                                                .pid = SYNTH_PID,
                                                                .tid = SYNTH_TID,
                                                                .cpl = 3,
                                                                .addrs = hot,
                                                                .n = 5,
                                                                .weight = 1},
                                       NULL) >= 0);
    for (int i = 0; i < 25; i++, n++)
        assert_true(profile_add_sample(p,
                                       &(struct prof_sample_in){.ts = 1000000000ull + n * 1000000,
                                                                .vcpu = 0,
                                                                .pid = SYNTH_PID,
                                                                .tid = SYNTH_TID,
                                                                .cpl = 3,
                                                                .addrs = warm,
                                                                .n = 4,
                                                                .weight = 1},
                                       NULL) >= 0);
    for (int i = 0; i < 5; i++, n++)
        assert_true(profile_add_sample(p,
                                       &(struct prof_sample_in){.ts = 1000000000ull + n * 1000000,
                                                                .vcpu = 1,
                                                                .pid = SYNTH_PID2,
                                                                .tid = SYNTH_PID2 + 0x30000000,
                                                                .cpl = 3,
                                                                .addrs = nosym,
                                                                .n = 2,
                                                                .weight = 1},
                                       NULL) >= 0);
    for (int i = 0; i < 4; i++, n++)
        assert_true(profile_add_sample(p,
                                       &(struct prof_sample_in){.ts = 1000000000ull + n * 1000000,
                                                                .vcpu = 1,
                                                                .pid = SYNTH_PID2,
                                                                .tid = SYNTH_PID2 + 0x30000000,
                                                                .cpl = 3,
                                                                .addrs = raw,
                                                                .n = 1,
                                                                .weight = 1},
                                       NULL) >= 0);
    for (int i = 0; i < 6; i++, n++)
        assert_true(profile_add_sample(p,
                                       &(struct prof_sample_in){.ts = 1000000000ull + n * 1000000,
                                                                .vcpu = 0,
                                                                .pid = 0x10000000,
                                                                .tid = 0,
                                                                .cpl = 0,
                                                                .addrs = kern,
                                                                .n = 2,
                                                                .weight = 1},
                                       NULL) >= 0);

    struct symbol_path sp;
    symbol_path_init(&sp);
    assert_int_equal(symbol_path_add_dir(&sp, FIXTURE_OUT, NULL), 0);
    size_t loaded = 0;
    assert_int_equal(profile_load_symbols(p, &sp, &loaded, NULL), 0);
    assert_int_equal(loaded, 1);
    symbol_path_free(&sp);
    char ks[4096];
    snprintf(ks, sizeof(ks), "%s/kallsyms.txt", FIXTURE_SRC);
    struct hv_err err;
    if (profile_set_kernel_symbols(p, ks, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(profile_symbolize(p, NULL, NULL, NULL), 0);
    return n;
}
