/* HotSpot's compressed streams read from outside (CompressedReadStream, the line number tables
 * and an nmethod's debug information): Pack200's UNSIGNED5 coding of ints, lg_H 6, up to five
 * bytes. Up to JDK 19 CompressedReadStream's own (a byte below 192 ends a number); from JDK 20
 * (JDK-8292758) the UNSIGNED5 class's, which never writes a 0 byte (each byte one more, so
 * below 193 ends). Signed ints are zigzag-coded. Every read bounded by the stream's end. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt_mem.h"

struct hs_stream {
    const struct rt_mem *m;
    uint64_t at, end;
    unsigned excluded; /* 0 (JDK <= 19) or 1 */
    /* bytes read ahead: [buf_at, buf_at + buf_n) */
    uint64_t buf_at;
    unsigned buf_n;
    uint8_t buf[32];
};

static inline bool hs_stream_byte(struct hs_stream *s, uint8_t *b)
{
    if (s->at >= s->end)
        return false;
    if (s->at < s->buf_at || s->at >= s->buf_at + s->buf_n) {
        /* up to 32 bytes, within the stream and its page: a page beyond may not be there */
        uint64_t n = s->end - s->at, page = 4096 - (s->at & 4095);
        if (n > sizeof(s->buf))
            n = sizeof(s->buf);
        if (n > page)
            n = page;
        if (!rt_read(s->m, s->at, s->buf, n))
            return false;
        s->buf_at = s->at;
        s->buf_n = (unsigned)n;
    }
    *b = s->buf[s->at++ - s->buf_at];
    return true;
}

static inline bool hs_stream_int(struct hs_stream *s, uint32_t *out)
{
    const unsigned X = s->excluded, H = 64, L = 256 - H - X;
    uint8_t b;
    if (!hs_stream_byte(s, &b) || b < X)
        return false;
    uint32_t sum = b - X;
    if (sum < L) {
        *out = sum;
        return true;
    }
    unsigned shift = 6;
    for (int i = 1; i < 5; i++) {
        if (!hs_stream_byte(s, &b) || b < X)
            return false;
        sum += (uint32_t)(b - X) << shift;
        if (b - X < L || i == 4) {
            *out = sum;
            return true;
        }
        shift += 6;
    }
    return false;
}

static inline bool hs_stream_signed(struct hs_stream *s, int32_t *out)
{
    uint32_t v;
    if (!hs_stream_int(s, &v))
        return false;
    *out = (int32_t)((v >> 1) ^ -(v & 1));
    return true;
}
