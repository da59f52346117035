/* Golden words for hvprof's records, computed by hand from docs/fxt-samples.md: the RFC-0274
 * sample layout with hvprof's extensions, the size cap, module, mapping and loss records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "schema/encode.h"

static uint64_t str_word(const char *s)
{
    uint64_t w = 0;
    memcpy(&w, s, strlen(s));
    return w;
}

static void test_sample_rfc_layout(void **state)
{
    uint64_t b[64], ks[2] = {0xffffffff81000010ull, 0xffffffff81000020ull};
    struct hvfxt_sample s = {.fields = HVFXT_SF_CONTINUATION | HVFXT_SF_PID | HVFXT_SF_TID |
                                       HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                                       HVFXT_SF_PC | HVFXT_SF_KERNEL_STACK | HVFXT_SF_WALK,
                             .continuation = 7,
                             .pid = 0x10000001,
                             .tid = 0x40000002,
                             .ts = 123456,
                             .vcpu = 1,
                             .cpl = 0,
                             .pc = 0xffffffff81000000ull,
                             .kernel_stack = ks,
                             .n_kernel = 2,
                             .walk = hvfxt_walk_word(HVFXT_STOP_END, HVFXT_STOP_DEFERRED, 0, 0)};
    assert_int_equal(hvfxt_sample_words(&s), 13);
    assert_int_equal(hvfxt_enc_sample(b, 64, &s), 13);
    const uint64_t want[13] = {
        0x00800060000000d5ull, 0x7dd, 7,     0x10000001, 0x40000002, 123456, 1, 0,
        0xffffffff81000000ull, 2,     ks[0], ks[1],      0x0601};
    assert_memory_equal(b, want, sizeof(want));

    /* The completion: continuation_completion, user stack, vcpu. */
    uint64_t us[3] = {0x401000, 0x401100, 0x401200};
    struct hvfxt_sample c = {.fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_USER_STACK |
                                       HVFXT_SF_VCPU,
                             .completion = 7,
                             .user_stack = us,
                             .n_user = 3,
                             .vcpu = 1};
    assert_int_equal(hvfxt_enc_sample(b, 64, &c), 8);
    const uint64_t wc[8] = {0x0080003800000085ull, 0x62, 7, 3, us[0], us[1], us[2], 1};
    assert_memory_equal(b, wc, sizeof(wc));
    assert_int_equal(hvfxt_enc_sample(b, 7, &c), 0); /* does not fit */
}

static void test_sample_size_cap(void **state)
{
    static uint64_t buf[4096], user[5000], kern[10];
    for (int i = 0; i < 5000; i++)
        user[i] = 0x400000 + (uint64_t)i;
    struct hvfxt_sample s = {.fields = HVFXT_SF_PC | HVFXT_SF_KERNEL_STACK | HVFXT_SF_USER_STACK,
                             .pc = 1,
                             .user_stack = user,
                             .n_user = 5000,
                             .kernel_stack = kern,
                             .n_kernel = 10};
    assert_int_equal(hvfxt_sample_words(&s), 4095);
    assert_int_equal(hvfxt_enc_sample(buf, 4096, &s), 4095);
    assert_int_equal((buf[0] >> 4) & 0xfff, 4095);
    assert_int_equal((buf[0] >> 32) & 0x7fff, 4094 * 8);
    assert_true(buf[1] ==
                (HVFXT_SF_PC | HVFXT_SF_KERNEL_STACK | HVFXT_SF_USER_STACK | HVFXT_SF_WALK));
    /* user count, 4079 frames, pc, kernel count 10, 10 frames, walk */
    assert_int_equal(buf[2], 4095 - 6 - 10);
    assert_true(buf[4094] == HVFXT_WALK_USER_TRUNC);
}

static void test_module_mapping_loss(void **state)
{
    uint64_t b[32];
    uint8_t bid[20];
    for (int i = 0; i < 20; i++)
        bid[i] = (uint8_t)(0xa0 + i);
    struct hvfxt_module m = {
        .id = 5, .name = "kernel", .name_len = 6, .build_id = bid, .build_id_len = 20};
    assert_int_equal(hvfxt_enc_module(b, 32, &m), 7);
    assert_true(b[0] == 0x0081003000000075ull && b[1] == 5 && b[2] == 0x140006);
    assert_true(b[3] == str_word("kernel"));
    assert_memory_equal(&b[4], bid, 20);
    assert_int_equal(((const uint8_t *)&b[4])[20], 0); /* zero padding */

    struct hvfxt_mapping mp = {.pid = 0x10000000,
                               .module_id = 5,
                               .start = 0xffffffff81000000ull,
                               .size = 0x200000,
                               .vaddr = 0x1000000,
                               .flags = 5,
                               .ts = 9};
    assert_int_equal(hvfxt_enc_mapping(b, 32, &mp), 8);
    const uint64_t wm[8] = {
        0x0082003800000085ull, 0x10000000, 5, 0xffffffff81000000ull, 0x200000, 0x1000000, 5, 9};
    assert_memory_equal(b, wm, sizeof(wm));

    /* vCPU 3's loss event lands on the VM (koid 1), thread vCPU 3 (koid 0x1003). */
    struct fxt_ring_loss l = {.ring_id = 3, .dropped = 17, .first_ts = 100, .last_ts = 200};
    assert_int_equal(hvfxt_enc_loss(b, 32, &l), HVFXT_LOSS_WORDS);
    const uint64_t wl[18] = {0x800f800600400124ull,
                             100,
                             1,
                             0x1003,
                             str_word("hvprof"),
                             str_word("records_"),
                             str_word("dropped"),
                             0x0000000080070034ull,
                             str_word("dropped"),
                             17,
                             0x0000000380040022ull,
                             str_word("vcpu"),
                             0x0000000080080034ull,
                             str_word("first_ts"),
                             100,
                             0x0000000080070034ull,
                             str_word("last_ts"),
                             200};
    assert_memory_equal(b, wl, sizeof(wl));
}

static void test_koids_and_names(void **state)
{
    /* docs/fxt-samples.md section 4: the ranges never overlap and stay below 2^32. */
    assert_true(hvfxt_koid_vcpu(0) == 0x1000 && hvfxt_koid_vcpu(1023) == 0x13ff);
    assert_true(hvfxt_koid_guest_process(0) == HVFXT_KOID_KERNEL_PROCESS);
    assert_true(hvfxt_koid_guest_process(5) == 0x10000005);
    assert_true(hvfxt_koid_guest_thread(5) == 0x40000005);
    assert_true(hvfxt_koid_is_guest_process(0x10000005) &&
                !hvfxt_koid_is_guest_process(0x40000005));
    assert_true(hvfxt_koid_is_guest_thread(0x40000005) && !hvfxt_koid_is_guest_thread(0x1000));
    assert_true(hvfxt_koid_guest_thread(0xbfffffffu) < (1ull << 32));
    assert_true(hvfxt_vcpu_provider(0) == 1);
    uint64_t w = hvfxt_walk_word(HVFXT_STOP_END, HVFXT_STOP_ABANDONED_FULL, 1, 0);
    assert_true(w == (0x0b01 | HVFXT_WALK_KERNEL_TRUNC));
    assert_int_equal(hvfxt_walk_kernel_stop(w), HVFXT_STOP_END);
    assert_int_equal(hvfxt_walk_user_stop(w), HVFXT_STOP_ABANDONED_FULL);
    assert_true(hvfxt_stop_is_abandoned(hvfxt_walk_user_stop(w)));
    assert_false(hvfxt_stop_is_abandoned(HVFXT_STOP_DEFERRED));
    assert_string_equal(hvfxt_stop_name(HVFXT_STOP_DEFERRED), "deferred");
    assert_string_equal(hvfxt_stop_name(HVFXT_STOP_ABANDONED_TIMEOUT), "abandoned-timeout");
    assert_string_equal(hvfxt_stop_name(200), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_rfc_layout),
        cmocka_unit_test(test_sample_size_cap),
        cmocka_unit_test(test_module_mapping_loss),
        cmocka_unit_test(test_koids_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
