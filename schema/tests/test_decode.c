/* The decoder of hvprof's records: each malformed sample, module and mapping blob rejected with
 * its offset and reason; blobs of other types and events that only look like a loss record left
 * alone; hvfxt_stats' counts on a small recording. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "schema/decode.h"

/* A minimal valid prefix: magic, provider info 1, section 1, init. Returns words. */
static size_t prefix(uint64_t *b)
{
    size_t n = fxt_enc_magic(b, 64);
    n += fxt_enc_provider_info(b + n, 64, 1, "p", 1);
    n += fxt_enc_provider_section(b + n, 64, 1);
    n += fxt_enc_init(b + n, 64, 1000);
    return n;
}

/* Decode the records after the prefix; the last one's kind, or -1 and the message. */
static int decode_all(const uint64_t *b, size_t words, char *msg, enum hvfxt_rec_kind *last)
{
    struct fxtr_reader r;
    static struct hvfxt_record x;
    struct hv_err err = {0};
    fxtr_init(&r, b, 8 * words);
    int rc;
    *last = HVFXT_REC_OTHER;
    while ((rc = hvfxt_next(&r, &x, &err)) == 1)
        *last = x.kind;
    fxtr_free(&r);
    strcpy(msg, rc < 0 ? err.msg : "");
    return rc;
}

#define EXPECT_ERR(words, n, needle)                                                               \
    do {                                                                                           \
        char m_[HV_ERR_MSG_MAX];                                                                   \
        enum hvfxt_rec_kind k_;                                                                    \
        assert_int_equal(decode_all((words), (n), m_, &k_), -1);                                   \
        if (!strstr(m_, (needle)))                                                                 \
            fail_msg("error '%s' lacks '%s'", m_, (needle));                                       \
    } while (0)

static void test_malformed_samples(void **state)
{
    uint64_t b[128];
    char msg[HV_ERR_MSG_MAX];
    enum hvfxt_rec_kind kind;
    size_t n = prefix(b);
    uint64_t st[2] = {1, 2};
    struct hvfxt_sample s = {.fields = HVFXT_SF_USER_STACK, .user_stack = st, .n_user = 2};
    size_t m = n + hvfxt_enc_sample(b + n, 64, &s);
    assert_int_equal(decode_all(b, m, msg, &kind), 0);
    assert_int_equal(kind, HVFXT_REC_SAMPLE);
    b[n + 2] = 3; /* three frames announced, two present */
    EXPECT_ERR(b, m, "offset 0x30: sample: user_fp_call_stack has 3 frames, past the end");
    b[n + 2] = 2;
    b[n + 1] |= 1ull << 20;
    EXPECT_ERR(b, m, "unknown fields_bitflags bits 0x100000");
    b[n + 1] = HVFXT_SF_USER_STACK | HVFXT_SF_PC; /* the pc word is missing */
    EXPECT_ERR(b, m, "sample: pc runs past the end of the payload");
    b[n + 1] = 0; /* no fields: the stack words are left over */
    EXPECT_ERR(b, m, "payload has 4 words, its fields use 1");
    /* A payload that is not whole words. */
    b[n + 1] = HVFXT_SF_USER_STACK;
    b[n] = (b[n] & ~(0x7fffull << 32)) | (31ull << 32);
    EXPECT_ERR(b, m, "payload of 31 bytes is not whole words");
}

static void test_malformed_module_mapping(void **state)
{
    uint64_t b[128];
    char msg[HV_ERR_MSG_MAX];
    enum hvfxt_rec_kind kind;
    size_t n = prefix(b);
    uint8_t bid[4] = {1, 2, 3, 4};
    struct hvfxt_module mod = {
        .id = 1, .name = "m", .name_len = 1, .build_id = bid, .build_id_len = 4};
    size_t m = n + hvfxt_enc_module(b + n, 64, &mod);
    assert_int_equal(decode_all(b, m, msg, &kind), 0);
    assert_int_equal(kind, HVFXT_REC_MODULE);
    b[n + 2] |= 1ull << 40;
    EXPECT_ERR(b, m, "module: reserved bits set");
    b[n + 2] = 1 | (200ull << 16); /* a 200-byte build id in a 5-word payload */
    EXPECT_ERR(b, m, "module: name or build id runs past the payload");

    struct hvfxt_mapping mp = {.pid = 1, .module_id = 1, .start = 0x1000, .size = 0x1000};
    m = n + hvfxt_enc_mapping(b + n, 64, &mp);
    assert_int_equal(decode_all(b, m, msg, &kind), 0);
    assert_int_equal(kind, HVFXT_REC_MAPPING);
    /* Cut to 6 payload words: header size and blob size both shrink by one word. */
    b[n] = b[n] - (1ull << 4) - (8ull << 32);
    EXPECT_ERR(b, m - 1, "mapping: payload shorter than its 7 words");

    /* Blob types that are not hvprof's: left alone, whatever their payload. */
    m = n + fxt_enc_blob(b + n, 64, fxt_str_inline(NULL), 0x01, "abc", 3);
    assert_int_equal(decode_all(b, m, msg, &kind), 0);
    assert_int_equal(kind, HVFXT_REC_OTHER);
}

static void test_loss_event(void **state)
{
    uint64_t b[128];
    char msg[HV_ERR_MSG_MAX];
    enum hvfxt_rec_kind kind;
    size_t n = prefix(b);
    struct fxt_ring_loss l = {.ring_id = 2, .dropped = 5, .first_ts = 10, .last_ts = 20};
    size_t m = n + hvfxt_enc_loss(b + n, 64, &l);
    struct fxtr_reader r;
    static struct hvfxt_record x;
    struct hv_err err;
    fxtr_init(&r, b, 8 * m);
    int rc, losses = 0;
    while ((rc = hvfxt_next(&r, &x, &err)) == 1) {
        if (x.kind != HVFXT_REC_LOSS)
            continue;
        losses++;
        assert_true(x.u.loss.dropped == 5 && x.u.loss.vcpu == 2 && x.u.loss.first_ts == 10 &&
                    x.u.loss.last_ts == 20);
        assert_true(x.fxt.u.event.pid == HVFXT_KOID_VM && x.fxt.u.event.tid == hvfxt_koid_vcpu(2));
    }
    assert_int_equal(rc, 0);
    assert_int_equal(losses, 1);
    fxtr_free(&r);
    /* The same name with three of the four arguments is just an event. */
    struct fxt_arg args[3] = {
        {.type = FXT_ARG_U64, .name = fxt_str_inline("dropped"), .v.u64 = 1},
        {.type = FXT_ARG_U32, .name = fxt_str_inline("vcpu"), .v.u32 = 0},
        {.type = FXT_ARG_U64, .name = fxt_str_inline("first_ts"), .v.u64 = 1},
    };
    struct fxt_event ev = {.type = FXT_EV_INSTANT,
                           .ts = 1,
                           .thread = {.pid = 1, .tid = 2},
                           .category = fxt_str_inline(HVFXT_CATEGORY),
                           .name = fxt_str_inline(HVFXT_LOSS_NAME),
                           .args = args,
                           .nargs = 3};
    m = n + fxt_enc_event(b + n, 64, &ev);
    assert_int_equal(decode_all(b, m, msg, &kind), 0);
    assert_int_equal(kind, HVFXT_REC_OTHER);
}

static void test_stats(void **state)
{
    static uint64_t b[256];
    size_t n = prefix(b);
    uint64_t us[1] = {0x401000};
    struct hvfxt_sample partial = {.fields = HVFXT_SF_CONTINUATION | HVFXT_SF_PC,
                                   .continuation = 1};
    struct hvfxt_sample done = {.fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_USER_STACK,
                                .completion = 1,
                                .user_stack = us,
                                .n_user = 1};
    n += hvfxt_enc_sample(b + n, 64, &partial);
    n += hvfxt_enc_sample(b + n, 64, &partial);
    n += hvfxt_enc_sample(b + n, 64, &done);
    struct hvfxt_mapping mp = {.pid = 1};
    n += hvfxt_enc_mapping(b + n, 64, &mp);
    struct fxt_ring_loss l = {.dropped = 7};
    n += hvfxt_enc_loss(b + n, 64, &l);
    struct hvfxt_stats st;
    struct hv_err err;
    assert_int_equal(hvfxt_stats(b, 8 * n, &st, &err), 0);
    assert_int_equal(st.samples, 2);
    assert_int_equal(st.completions, 1);
    assert_int_equal(st.mappings, 1);
    assert_int_equal(st.loss_records, 1);
    assert_int_equal(st.dropped, 7);
    assert_int_equal(st.records, 9);
    assert_int_equal(st.bytes, 8 * n);
    assert_int_equal(st.by_type[FXTR_BLOB], 4);
}

/* The flight recorder's overwrite event decodes apart from the loss event; the timestamps the
 * flight recorder keeps records by: a sample's ts field after the fields before it, an event's
 * own, nothing for the rest. */
static void test_overwrite_and_record_ts(void **state)
{
    (void)state;
    uint64_t b[128];
    size_t n = prefix(b);
    struct fxt_ring_loss l = {.ring_id = 3, .dropped = 7, .first_ts = 11, .last_ts = 99};
    size_t k = hvfxt_enc_overwrite(b + n, 64, &l);
    uint64_t ts = 0;
    assert_true(hvfxt_record_ts(b + n, k, &ts));
    assert_int_equal(ts, 11);
    struct fxtr_reader r;
    static struct hvfxt_record x;
    struct hv_err err;
    fxtr_init(&r, b, 8 * (n + k));
    int rc, seen = 0;
    while ((rc = hvfxt_next(&r, &x, &err)) == 1) {
        assert_int_not_equal(x.kind, HVFXT_REC_LOSS);
        if (x.kind != HVFXT_REC_OVERWRITE)
            continue;
        seen++;
        assert_true(x.u.loss.dropped == 7 && x.u.loss.vcpu == 3 && x.u.loss.first_ts == 11 &&
                    x.u.loss.last_ts == 99);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(seen, 1);
    fxtr_free(&r);

    uint64_t user[2] = {0x1000, 0x2000};
    struct hvfxt_sample smp = {.fields = HVFXT_SF_CONTINUATION | HVFXT_SF_PID | HVFXT_SF_BOOT_TS |
                                         HVFXT_SF_USER_STACK,
                               .continuation = 5,
                               .pid = 6,
                               .ts = 123456789,
                               .user_stack = user,
                               .n_user = 2};
    k = hvfxt_enc_sample(b, 64, &smp);
    assert_true(k > 0);
    ts = 0;
    assert_true(hvfxt_record_ts(b, k, &ts));
    assert_int_equal(ts, 123456789);
    smp.fields &= ~(uint32_t)HVFXT_SF_BOOT_TS;
    k = hvfxt_enc_sample(b, 64, &smp);
    assert_false(hvfxt_record_ts(b, k, &ts));
    k = fxt_enc_blob(b, 64, fxt_str_inline(NULL), 0x01, "abc", 3);
    assert_false(hvfxt_record_ts(b, k, &ts));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_samples),
        cmocka_unit_test(test_malformed_module_mapping),
        cmocka_unit_test(test_loss_event),
        cmocka_unit_test(test_overwrite_and_record_ts),
        cmocka_unit_test(test_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
