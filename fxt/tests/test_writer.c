/* The generic file writer: provider info only before the first section, a section only when the
 * provider changes, one initialization record per provider on its first selection, rings drained
 * under their provider with the pending loss record at the end, and errors for providers out of
 * range. Read back with the independent reader. */
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
#include "fxt/ring.h"
#include "fxt/writer.h"

static size_t enc_loss(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l)
{
    uint64_t payload[3] = {l->dropped, l->first_ts, l->last_ts};
    return fxt_enc_blob(buf, cap, fxt_str_inline("loss"), 2, payload, sizeof(payload));
}

static size_t instant(uint64_t *buf, size_t cap, uint64_t ts, const char *name)
{
    struct fxt_event ev = {.type = FXT_EV_INSTANT,
                           .ts = ts,
                           .thread = {.pid = 1, .tid = 2},
                           .name = fxt_str_inline(name)};
    return fxt_enc_event(buf, cap, &ev);
}

static void test_providers_sections_rings(void **state)
{
    char path[] = "/tmp/hvprof-fxt-writer-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct hv_err err = {0};
    static struct fxt_writer w;
    assert_int_equal(fxt_writer_open(&w, path, 0, 2, &err), -1); /* zero tick rate */
    assert_int_equal(fxt_writer_open(&w, path, 1000, 3, &err), 0);
    assert_int_equal(fxt_writer_provider(&w, 0, "control", &err), 0);
    assert_int_equal(fxt_writer_provider(&w, 1, "one", &err), 0);
    assert_int_equal(fxt_writer_provider(&w, 3, "three", &err), -1);
    assert_non_null(strstr(err.msg, "provider 3 does not exist"));

    uint64_t rec[16];
    assert_int_equal(fxt_writer_emit(&w, 0, rec, instant(rec, 16, 5, "a"), &err), 0);
    assert_int_equal(fxt_writer_provider(&w, 2, "late", &err), -1);
    assert_non_null(strstr(err.msg, "after the first section"));
    assert_int_equal(fxt_writer_emit(&w, 0, rec, instant(rec, 16, 6, "b"), &err), 0);
    assert_int_equal(fxt_writer_emit(&w, 4, rec, instant(rec, 16, 6, "c"), &err), -1);

    /* A ring of provider 1 with three records and two drops at the end. */
    struct fxt_ring r;
    assert_int_equal(fxt_ring_init(&r, 4096, 7, enc_loss, 6, &err), -1); /* writes 5 */
    assert_int_equal(fxt_ring_init(&r, 4096, 7, enc_loss, 5, &err), 0);
    const uint32_t words = (uint32_t)instant(rec, 16, 0, "r"); /* header, ts, pid, tid, name */
    assert_int_equal(words, 5);
    for (uint64_t ts = 10; ts < 13; ts++) {
        uint64_t *p = fxt_ring_reserve(&r, words, ts);
        assert_non_null(p);
        fxt_ring_commit(&r, (uint32_t)instant(p, words, ts, "r"));
    }
    assert_null(fxt_ring_reserve(&r, 4095, 20));
    assert_null(fxt_ring_reserve(&r, 4095, 21));
    assert_int_equal(fxt_writer_drain_ring(&w, 1, &r, false, &err), 3);
    assert_int_equal(fxt_writer_drain_ring(&w, 1, &r, true, &err), 1); /* the loss record */
    assert_int_equal(fxt_writer_drain_ring(&w, 1, &r, true, &err), 0);
    assert_int_equal(fxt_writer_emit(&w, 0, rec, instant(rec, 16, 30, "d"), &err), 0);
    assert_int_equal(fxt_writer_close(&w, &err), 0);
    fxt_ring_destroy(&r);

    /* Expected sequence: magic, info 0, info 1, section 0, init, a, b, section 1, init, r r r,
     * loss, section 0, d (no second init for provider 0). */
    const void *buf;
    size_t len;
    assert_int_equal(fxtr_map_file(path, &buf, &len, &err), 0);
    struct fxtr_reader rd;
    static struct fxtr_record x;
    fxtr_init(&rd, buf, len);
    char seq[64] = "";
    int rc;
    while ((rc = fxtr_next(&rd, &x, &err)) == 1) {
        char c = '?';
        if (x.type == FXTR_METADATA)
            c = x.u.meta.mtype == 1   ? 'I'
                : x.u.meta.mtype == 2 ? (char)('0' + x.u.meta.provider_id)
                                      : 'M';
        else if (x.type == FXTR_INIT)
            c = 'i';
        else if (x.type == FXTR_EVENT)
            c = x.u.event.name.ptr[0];
        else if (x.type == FXTR_BLOB && x.u.blob.btype == 2) {
            uint64_t p[3];
            memcpy(p, x.u.blob.payload, sizeof(p));
            assert_true(p[0] == 2 && p[1] == 20 && p[2] == 21);
            c = 'L';
        }
        strncat(seq, &c, 1);
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_string_equal(seq, "MII0iab1irrrL0d");
    fxtr_free(&rd);
    fxtr_unmap_file(buf, len);
    unlink(path);
}

/* The record sequence of a file, one letter each (as above). */
static void sequence(const char *path, char *seq, size_t len)
{
    const void *buf;
    size_t n;
    struct hv_err err = {0};
    assert_int_equal(fxtr_map_file(path, &buf, &n, &err), 0);
    struct fxtr_reader rd;
    static struct fxtr_record x;
    fxtr_init(&rd, buf, n);
    seq[0] = 0;
    int rc;
    while ((rc = fxtr_next(&rd, &x, &err)) == 1 && strlen(seq) + 1 < len) {
        char c = x.type == FXTR_METADATA
                     ? (x.u.meta.mtype == 1   ? 'I'
                        : x.u.meta.mtype == 2 ? (char)('0' + x.u.meta.provider_id)
                                              : 'M')
                 : x.type == FXTR_INIT  ? 'i'
                 : x.type == FXTR_EVENT ? x.u.event.name.ptr[0]
                                        : '?';
        strncat(seq, &c, 1);
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    fxtr_free(&rd);
    fxtr_unmap_file(buf, n);
}

/* A copy holds what the original wrote and what it still buffers, and continues its streams:
 * the same provider selected needs no new section, a provider already initialized no second
 * initialization record. The original goes on untouched. */
static void test_open_copy(void **state)
{
    (void)state;
    char a[] = "/tmp/hvprof-fxt-copy-a-XXXXXX", b[] = "/tmp/hvprof-fxt-copy-b-XXXXXX";
    int fa = mkstemp(a), fb = mkstemp(b);
    assert_true(fa >= 0 && fb >= 0);
    close(fa);
    close(fb);
    struct hv_err err = {0};
    static struct fxt_writer w, c;
    uint64_t rec[16];
    assert_int_equal(fxt_writer_open(&w, a, 1000, 2, &err), 0);
    assert_int_equal(fxt_writer_provider(&w, 0, "zero", &err), 0);
    assert_int_equal(fxt_writer_provider(&w, 1, "one", &err), 0);
    assert_int_equal(fxt_writer_emit(&w, 1, rec, instant(rec, 16, 1, "a"), &err), 0);
    assert_int_equal(fxt_writer_flush(&w, &err), 0);                                  /* on disk */
    assert_int_equal(fxt_writer_emit(&w, 1, rec, instant(rec, 16, 2, "b"), &err), 0); /* buffered */
    assert_int_equal(fxt_writer_open_copy(&c, b, &w, &err), 0);
    assert_int_equal(fxt_writer_emit(&c, 1, rec, instant(rec, 16, 3, "c"), &err), 0);
    assert_int_equal(fxt_writer_emit(&c, 0, rec, instant(rec, 16, 4, "d"), &err), 0);
    assert_int_equal(fxt_writer_emit(&w, 1, rec, instant(rec, 16, 5, "e"), &err), 0);
    assert_int_equal(fxt_writer_close(&c, &err), 0);
    assert_int_equal(fxt_writer_close(&w, &err), 0);
    char seq[64];
    sequence(b, seq, sizeof(seq));
    assert_string_equal(seq, "MII1iabc0id");
    sequence(a, seq, sizeof(seq));
    assert_string_equal(seq, "MII1iabe");
    unlink(a);
    unlink(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_providers_sections_rings),
        cmocka_unit_test(test_open_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
