/* CPython's location table (co_linetable, 3.11+; Objects/locations.md), decoded for the line of
 * an instruction: each form of entry, lines going down and up, ranges without a location, and
 * tables a hostile guest could write (no entry marker, a varint that never ends, an entry cut
 * short, an index past the table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "python/py_code.h"

/* An entry's first byte: 1, code (4 bits), length - 1 (3 bits). */
#define E(code, len) (uint8_t)(0x80 | (code) << 3 | ((len)-1))

static void test_forms(void **state)
{
    (void)state;
    const uint8_t t[] = {
        E(13, 1), 0x00,                    /* units 0: no columns, line delta 0 -> 10 */
        E(11, 2), 4,           8,          /* units 1-2: one-line form, delta +1 -> 11 */
        E(0, 3),  5,                       /* units 3-5: short form, same line -> 11 */
        E(14, 1), 0x06,        0,    1, 2, /* unit 6: long form, svarint 6 = +3 -> 14 */
        E(15, 2),                          /* units 7-8: no location */
        E(13, 1), 0x05,                    /* unit 9: svarint 5 = -2 -> 12 */
        E(13, 1), 0x40 | 0x02, 0x01,       /* unit 10: varint 2 | 1 << 6 = 66, svarint +33 -> 45 */
    };
    const int32_t want[] = {10, 11, 11, 11, 11, 11, 14, -1, -1, 12, 45};
    for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(py_line_of(t, sizeof(t), 10, i), want[i]);
    assert_int_equal(py_line_of(t, sizeof(t), 10, 11), -1); /* past the table */
}

static void test_hostile(void **state)
{
    (void)state;
    const uint8_t no_marker[] = {0x13, 0x00};
    assert_int_equal(py_line_of(no_marker, sizeof(no_marker), 1, 0), -1);
    const uint8_t endless[] = {E(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
    assert_int_equal(py_line_of(endless, sizeof(endless), 1, 0), -1);
    const uint8_t cut[] = {E(14, 1), 0x02, 0x00};
    assert_int_equal(py_line_of(cut, sizeof(cut), 1, 0), -1);
    const uint8_t short_cut[] = {E(11, 1), 4};
    assert_int_equal(py_line_of(short_cut, sizeof(short_cut), 1, 0), -1);
    /* Below line 0: no line. */
    const uint8_t down[] = {E(13, 1), 0x0b}; /* -5 */
    assert_int_equal(py_line_of(down, sizeof(down), 3, 0), -1);
    /* Every byte string up to 3 bytes decodes or refuses, never reads past its end (ASan). */
    for (unsigned v = 0; v < (1u << 24); v += 257) {
        uint8_t b[3] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16)};
        for (size_t n = 0; n <= 3; n++)
            (void)py_line_of(b, n, 1, v & 7);
    }
    assert_int_equal(py_line_of(NULL, 0, 1, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_forms),
                                       cmocka_unit_test(test_hostile)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
