/* The interning tables' index limits: 0x7fff strings and 0xff threads per provider, then
 * inline references; the reader resolves every one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/encode.h"
#include "fxt/intern.h"
#include "fxt/reader.h"

#define sv fxtr_str_is

static void test_intern_limits(void **state)
{
    static struct fxt_intern in;
    static uint64_t file[1 << 20];
    struct hv_err err;
    assert_int_equal(fxt_intern_init(&in, 0x8000, 10, 1, &err), -1);
    assert_int_equal(fxt_intern_init(&in, 10, 0x100, 1, &err), -1);
    assert_int_equal(fxt_intern_init(&in, 0x7fff, 0xff, 1 << 20, &err), 0);
    size_t n = fxt_enc_magic(file, 8);
    n += fxt_enc_provider_info(file + n, 8, 0, "p", 1);
    n += fxt_enc_provider_section(file + n, 8, 0);
    n += fxt_enc_init(file + n, 8, 1000);
    char s[16];
    size_t nw;
    for (unsigned i = 0; i <= 0x7fff; i++) {
        int len = snprintf(s, sizeof(s), "s%u", i);
        struct fxt_str ref = fxt_intern_str(&in, s, (size_t)len, file + n, 16, &nw);
        n += nw;
        if (i < 0x7fff) {
            assert_int_equal(ref.index, i + 1);
            assert_true(nw > 0);
        } else { /* index space exhausted: inline, nothing written */
            assert_int_equal(ref.index, 0);
            assert_int_equal(ref.len, len);
            assert_int_equal(nw, 0);
        }
        /* the same string again: same reference, nothing written */
        struct fxt_str again = fxt_intern_str(&in, s, (size_t)len, file + n, 16, &nw);
        assert_int_equal(nw, 0);
        assert_int_equal(again.index, ref.index);
        struct fxt_event ev = {
            .type = FXT_EV_INSTANT, .ts = i, .thread = {.pid = 1, .tid = 2}, .name = ref};
        n += fxt_enc_event(file + n, 16, &ev);
    }
    for (unsigned i = 0; i <= 0xff; i++) {
        struct fxt_thread t = fxt_intern_thread(&in, 7, 100 + i, file + n, 16, &nw);
        n += nw;
        assert_int_equal(t.index, i < 0xff ? i + 1 : 0);
        struct fxt_event ev = {
            .type = FXT_EV_INSTANT, .ts = i, .thread = t, .name = fxt_str_index(1)};
        n += fxt_enc_event(file + n, 16, &ev);
    }
    fxt_intern_destroy(&in);
    /* The reader accepts it all and resolves the last interned string and thread. */
    struct fxtr_reader r;
    static struct fxtr_record x;
    fxtr_init(&r, file, 8 * n);
    int rc;
    uint64_t events = 0;
    while ((rc = fxtr_next(&r, &x, &err)) == 1) {
        if (x.type != FXTR_EVENT)
            continue;
        if (events == 0x7ffe)
            assert_true(sv(x.u.event.name, "s32766"));
        if (events == 0x7fff)
            assert_true(sv(x.u.event.name, "s32767"));
        if (events >= 0x8000) /* interned (index 1..0xff), then the inline one */
            assert_true(x.u.event.pid == 7 && x.u.event.tid == 100 + (events - 0x8000));
        events++;
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(events, 0x8000 + 0x100);
    fxtr_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
