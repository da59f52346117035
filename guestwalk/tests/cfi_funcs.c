/* Call chains for the CFI unwinder's tests, built as a distribution builds its code: -O2 with
 * -fomit-frame-pointer (cfi_*: RBP is an ordinary register, every frame known only from
 * .eh_frame), and one function without unwind tables but with a frame pointer (fp_mid: the
 * walk crosses it by its frame chain). Each function uses its callee's result, so none is a
 * tail call, and keeps a buffer on its stack so CFA offsets are not all 8. */
#include "cfi_funcs.h"

#include <signal.h>
#include <stdlib.h>

#ifndef CFI_FP_ONLY
volatile long cfi_sink;

__attribute__((noinline)) long cfi_c(const struct cfi_call *c, int depth)
{
    volatile char buf[40];
    buf[depth & 31] = (char)depth;
    if (c->signal) {
        raise(SIGUSR1); /* the handler captures: the walk crosses the signal frame */
        return buf[depth & 31] + cfi_sink;
    }
    c->leaf(c->arg);
    return buf[depth & 31] + cfi_sink;
}

__attribute__((noinline)) long cfi_b(const struct cfi_call *c, int depth)
{
    volatile char buf[72];
    buf[depth & 63] = (char)depth;
    long r = c->through_fp ? fp_mid(c, depth + 1) : cfi_c(c, depth + 1);
    return r + buf[depth & 63];
}

__attribute__((noinline)) long cfi_a(const struct cfi_call *c, int depth)
{
    long r = depth < c->recurse ? cfi_a(c, depth + 1) : cfi_b(c, depth + 1);
    cfi_sink += r;
    return r + 1;
}

static const struct cfi_call *sort_call;

static int cmp(const void *x, const void *y)
{
    const struct cfi_call *c = sort_call;
    if (c) {
        sort_call = NULL;
        cfi_b(c, 0);
    }
    return *(const int *)x - *(const int *)y;
}

__attribute__((noinline)) long cfi_through_qsort(const struct cfi_call *c)
{
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 37) % 64;
    sort_call = c;
    qsort(v, 64, sizeof(v[0]), cmp);
    return v[0] + cfi_sink;
}
#else
extern volatile long cfi_sink;

__attribute__((noinline)) long fp_mid(const struct cfi_call *c, int depth)
{
    volatile char buf[24];
    buf[depth & 15] = (char)depth;
    long r = cfi_c(c, depth + 1);
    return r + buf[depth & 15];
}
#endif
