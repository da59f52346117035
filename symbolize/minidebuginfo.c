/* liblzma's stream decoder over a buffer that doubles up to MINIDEBUGINFO_MAX_BYTES. */
#include "symbolize/minidebuginfo.h"

#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>

int minidebuginfo_unpack(const void *buf, size_t len, void **out, size_t *outlen,
                         struct hv_err *err)
{
    *out = NULL;
    *outlen = 0;
    lzma_stream s = LZMA_STREAM_INIT;
    /* A memory limit for the decoder's own dictionary too (xz's presets use at most 64 MiB). */
    if (lzma_stream_decoder(&s, 128u << 20, 0) != LZMA_OK)
        return hv_errk(err, HV_ERR_NO_MEMORY, ".gnu_debugdata: cannot start the xz decoder");
    size_t cap = len * 4 < (1u << 16) ? (1u << 16) : len * 4;
    if (cap > MINIDEBUGINFO_MAX_BYTES)
        cap = MINIDEBUGINFO_MAX_BYTES;
    uint8_t *dst = malloc(cap);
    int rc = -1;
    if (!dst) {
        hv_errk(err, HV_ERR_NO_MEMORY, ".gnu_debugdata: out of memory");
        goto done;
    }
    s.next_in = buf;
    s.avail_in = len;
    s.next_out = dst;
    s.avail_out = cap;
    for (;;) {
        lzma_ret r = lzma_code(&s, LZMA_FINISH);
        if (r == LZMA_STREAM_END)
            break;
        if (r == LZMA_OK && s.avail_out == 0) {
            if (cap == MINIDEBUGINFO_MAX_BYTES) {
                hv_errk(err, HV_ERR_LIMIT, ".gnu_debugdata: unpacks to more than %u MiB",
                        MINIDEBUGINFO_MAX_BYTES >> 20);
                goto done;
            }
            size_t ncap = cap * 2 > MINIDEBUGINFO_MAX_BYTES ? MINIDEBUGINFO_MAX_BYTES : cap * 2;
            uint8_t *nd = realloc(dst, ncap);
            if (!nd) {
                hv_errk(err, HV_ERR_NO_MEMORY, ".gnu_debugdata: out of memory");
                goto done;
            }
            dst = nd;
            s.next_out = dst + cap;
            s.avail_out = ncap - cap;
            cap = ncap;
            continue;
        }
        hv_errk(err, HV_ERR_CORRUPT, ".gnu_debugdata: not a whole xz stream (liblzma error %d)",
                (int)r);
        goto done;
    }
    *outlen = cap - s.avail_out;
    *out = dst;
    dst = NULL;
    rc = 0;
done:
    free(dst);
    lzma_end(&s);
    return rc;
}
