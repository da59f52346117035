/* The strict reader on a real third-party file (every record decoded, every byte consumed) and on
 * hand-made malformed inputs (each rejected with its offset and reason, unknown types skipped).
 * The file is fxt/tests/data/third_party/jane_tracing.fxt (NOTICE.md there). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fxt/encode.h"
#include "fxt/reader.h"

static char fixture[4096];

static void fixture_path(void)
{
    const char *src = getenv("HVPROF_SOURCE_DIR");
    assert_non_null(src);
    snprintf(fixture, sizeof(fixture), "%s/fxt/tests/data/third_party/jane_tracing.fxt", src);
}

#define str_is fxtr_str_is

static void test_fixture_every_record(void **state)
{
    fixture_path();
    const void *buf;
    size_t len;
    struct hv_err err = {0};
    assert_int_equal(fxtr_map_file(fixture, &buf, &len, &err), 0);
    assert_int_equal(len, 992384);

    struct fxtr_reader r;
    static struct fxtr_record rec;
    fxtr_init(&r, buf, len);
    uint64_t by_type[16] = {0}, n = 0, bytes = 0, args = 0, begins = 0, ends = 0;
    int rc;
    while ((rc = fxtr_next(&r, &rec, &err)) == 1) {
        assert_false(rec.unknown);
        by_type[rec.type]++;
        bytes += 8 * rec.nwords;
        if (n == 1) {
            assert_int_equal(rec.u.meta.mtype, 1);
            assert_true(str_is(rec.u.meta.name, "jane_tracing"));
        }
        if (rec.type == FXTR_INIT)
            assert_true(rec.u.init.ticks_per_second == 1000000000);
        if (rec.type == FXTR_KOBJ && rec.u.kobj.obj_type == 2) {
            assert_true(str_is(rec.u.kobj.name, "main"));
            assert_int_equal(rec.u.kobj.nargs, 1);
            assert_int_equal(rec.u.kobj.args[0].type, FXTR_ARG_KOID);
            assert_true(str_is(rec.u.kobj.args[0].name, "process"));
            assert_true(rec.u.kobj.args[0].v.u == 1);
        }
        if (rec.type == FXTR_EVENT) {
            assert_true(rec.u.event.pid == 1 && rec.u.event.tid == 2);
            assert_true(rec.u.event.name.len > 0);
            args += rec.u.event.nargs;
            begins += rec.u.event.etype == 2;
            ends += rec.u.event.etype == 3;
        }
        n++;
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(r.off, len);
    assert_int_equal(bytes, len);
    /* 35,463 records in all. The fixture's NOTICE says "34,594 records": that is the number of
     * records that are not interning or metadata (34,592 events + 2 kernel objects). */
    assert_int_equal(n, 35463);
    assert_int_equal(by_type[0], 3);
    assert_int_equal(by_type[1], 1);
    assert_int_equal(by_type[2], 864);
    assert_int_equal(by_type[3], 1);
    assert_int_equal(by_type[4], 34592);
    assert_int_equal(by_type[7], 2);
    assert_int_equal(by_type[4] + by_type[7], 34594);
    assert_int_equal(begins, 17296);
    assert_int_equal(ends, 17296);
    assert_int_equal(args, 17278 * 2 + 18 * 3);
    fxtr_free(&r);
    fxtr_unmap_file(buf, len);
}

/* A minimal valid prefix: magic, provider info 1, section 1, init. Returns words. */
static size_t prefix(uint64_t *b)
{
    size_t n = fxt_enc_magic(b, 64);
    n += fxt_enc_provider_info(b + n, 64, 1, "p", 1);
    n += fxt_enc_provider_section(b + n, 64, 1);
    n += fxt_enc_init(b + n, 64, 1000);
    return n;
}

/* Read to the end; return -1 and the message on error. */
static int read_all(const uint64_t *b, size_t bytes, char *msg, uint64_t *unknown)
{
    struct fxtr_reader r;
    static struct fxtr_record rec;
    struct hv_err err = {0};
    fxtr_init(&r, b, bytes);
    int rc;
    *unknown = 0;
    while ((rc = fxtr_next(&r, &rec, &err)) == 1)
        *unknown += rec.unknown;
    fxtr_free(&r);
    strcpy(msg, rc < 0 ? err.msg : "");
    /* Everything the reader rejects is the file's fault: callers branch on the kind. */
    if (rc < 0 && hv_err_kind(&err) != HV_ERR_CORRUPT)
        fail_msg("error '%s' is of kind %s, not corrupt", err.msg,
                 hv_err_kind_name(hv_err_kind(&err)));
    return rc;
}

#define EXPECT_ERR(words, nbytes, needle)                                                          \
    do {                                                                                           \
        char m_[HV_ERR_MSG_MAX];                                                                   \
        uint64_t u_;                                                                               \
        assert_int_equal(read_all((words), (nbytes), m_, &u_), -1);                                \
        if (!strstr(m_, (needle)))                                                                 \
            fail_msg("error '%s' lacks '%s'", m_, (needle));                                       \
    } while (0)

static void test_malformed(void **state)
{
    uint64_t b[128];
    char msg[HV_ERR_MSG_MAX];
    uint64_t unknown;
    size_t n = prefix(b);
    assert_int_equal(read_all(b, 8 * n, msg, &unknown), 0);

    EXPECT_ERR(b, 0, "offset 0x0: empty input");
    /* No magic first. */
    EXPECT_ERR(b + 1, 8 * (n - 1), "offset 0x0: the file does not start with the FXT magic");
    /* A cut file (a partial word, a record running past the end): every record before the
     * cut read, the cut said in the reader. */
    size_t m = n + fxt_enc_string(b + n, 64, 1, "0123456789abcdef", 16);
    for (size_t cut = 8 * n + 1; cut < 8 * m; cut++) {
        struct fxtr_reader r;
        static struct fxtr_record rec;
        struct hv_err err = {0};
        fxtr_init(&r, b, cut);
        size_t got = 0;
        int rc;
        while ((rc = fxtr_next(&r, &rec, &err)) == 1)
            got++;
        assert_int_equal(rc, 0);
        assert_int_equal(got, 4); /* magic, provider info, section, init */
        assert_true(r.cut);
        assert_int_equal(r.cut_offset, 8 * n);
        assert_int_equal(r.cut_have, cut - 8 * n);
        assert_int_equal(r.cut_need, cut - 8 * n < 8 ? 0 : 8 * (m - n));
        fxtr_free(&r);
    }
    /* Size 0. */
    b[n] = 0x2;
    EXPECT_ERR(b, 8 * (n + 1), "size 0");
    /* Section without provider info. */
    m = n + fxt_enc_provider_section(b + n, 64, 9);
    EXPECT_ERR(b, 8 * m, "provider 9, which has no provider info");
    /* Event using an unregistered string index. */
    struct fxt_event ev = {
        .type = FXT_EV_INSTANT, .ts = 1, .thread = {.pid = 1, .tid = 2}, .name = fxt_str_index(5)};
    m = n + fxt_enc_event(b + n, 64, &ev);
    EXPECT_ERR(b, 8 * m, "string index 5 is not registered");
    /* Event using an unregistered thread index. */
    ev.name = fxt_str_inline("x");
    ev.thread.index = 3;
    m = n + fxt_enc_event(b + n, 64, &ev);
    EXPECT_ERR(b, 8 * m, "thread index 3 is not registered");
    /* An event before the initialization record (prefix without init). */
    ev.thread.index = 0;
    m = (n - 2) + fxt_enc_event(b + n - 2, 64, &ev);
    EXPECT_ERR(b, 8 * m, "before provider 1's initialization record");
    /* An event before any provider section. */
    m = 1 + fxt_enc_event(b + 1, 64, &ev);
    EXPECT_ERR(b, 8 * m, "before any provider section");
    n = prefix(b); /* the cases above overwrote it */
    /* Argument size that does not add up: a uint64 arg declared as 3 words. */
    struct fxt_arg a = {.type = FXT_ARG_U64, .name = fxt_str_inline("v"), .v.u64 = 1};
    ev.args = &a;
    ev.nargs = 1;
    m = n + fxt_enc_event(b + n, 64, &ev);
    if (read_all(b, 8 * m, msg, &unknown) != 0)
        fail_msg("%s", msg);
    b[n + 5] += 1ull << 4; /* arg header: size 3 -> 4 */
    EXPECT_ERR(b, 8 * m, "offset 0x30: argument 1: 4 words run past the end of the record");
    b[n] += 1ull << 4; /* record one word longer, so the arg fits but its value does not use it */
    b[m] = 0;
    EXPECT_ERR(b, 8 * (m + 1), "declares 4 words, its value uses 3");
    /* A record with an extra word its fields do not use (the legacy instant scope word). */
    ev.nargs = 0;
    m = n + fxt_enc_event(b + n, 64, &ev);
    b[n] += 1ull << 4;
    b[m] = 0;
    EXPECT_ERR(b, 8 * (m + 1), "declares 6 words but its fields use 5");
    /* Large record of 4096 words or more. */
    b[n] = 0xf | (4096ull << 4);
    EXPECT_ERR(b, 8 * (n + 1), "4096 or more");
    /* Unknown record type 12 and unknown event type 13: reported, skipped, not fatal. */
    m = n;
    b[m++] = 0xc | (2ull << 4);
    b[m++] = 0xdead;
    b[m++] = 0x4 | (1ull << 4) | (13ull << 16);
    m += fxt_enc_provider_event(b + m, 64, 1, 0);
    assert_int_equal(read_all(b, 8 * m, msg, &unknown), 0);
    assert_int_equal(unknown, 2);
}

static void test_roundtrip_through_reader_types(void **state)
{
    /* Records the writer never produces but the reader must frame: scheduling, log, large blob,
     * userspace object. Built by hand from the spec's layouts. */
    uint64_t b[64];
    size_t n = prefix(b);
    n += fxt_enc_thread(b + n, 64, 1, 10, 11);
    /* context switch (subtype 1): 0 args, cpu 3 */
    b[n++] = 0x8 | (4ull << 4) | (3ull << 20) | (1ull << 60);
    b[n++] = 77;
    b[n++] = 11;
    b[n++] = 12;
    /* log: "hi", thread ref 1 */
    b[n++] = 0x9 | (3ull << 4) | (2ull << 16) | (1ull << 32);
    b[n++] = 78;
    b[n++] = 0x6968;
    /* large blob, format 0: inline thread, 0 args, 3 bytes */
    b[n++] = 0xf | (7ull << 4);
    b[n++] = 0;
    b[n++] = 79;
    b[n++] = 10;
    b[n++] = 11;
    b[n++] = 3;
    b[n++] = 0x636261;
    /* userspace object, thread ref 1, inline name "o" */
    b[n++] = 0x6 | (3ull << 4) | (1ull << 16) | (0x8001ull << 24);
    b[n++] = 0x1000;
    b[n++] = 'o';
    struct fxtr_reader r;
    static struct fxtr_record rec;
    struct hv_err err = {0};
    fxtr_init(&r, b, 8 * n);
    int rc, seen = 0;
    while ((rc = fxtr_next(&r, &rec, &err)) == 1) {
        assert_false(rec.unknown);
        if (rec.type == FXTR_SCHED) {
            assert_true(rec.u.sched.ts == 77 && rec.u.sched.cpu == 3 && rec.u.sched.out_tid == 11 &&
                        rec.u.sched.in_tid == 12);
            seen |= 1;
        } else if (rec.type == FXTR_LOG) {
            assert_true(rec.u.log.tid == 11 && str_is(rec.u.log.msg, "hi"));
            seen |= 2;
        } else if (rec.type == FXTR_LARGE) {
            assert_true(rec.u.large.ts == 79 && rec.u.large.size == 3 &&
                        !memcmp(rec.u.large.payload, "abc", 3));
            seen |= 4;
        } else if (rec.type == FXTR_UOBJ) {
            seen |= 8;
        }
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(seen, 15);
    fxtr_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_every_record),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_roundtrip_through_reader_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
