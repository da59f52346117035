/* A recording assembled in memory by the report's tests with the recorder's own encoders
 * (fxt/encode.h, schema/encode.h): each encoder writes at b->w + b->n with CAP(b) words left,
 * and put() counts what it wrote (0, a record that did not fit, fails the test). */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

struct buf {
    uint64_t w[1 << 14];
    size_t n;
};

static inline void put(struct buf *b, size_t n)
{
    assert_true(n > 0);
    b->n += n;
}
#define CAP(b) (sizeof((b)->w) / 8 - (b)->n)
