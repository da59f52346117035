/* Real functions whose machine code the leaf-repair tests copy into guest memory. This file is
 * compiled twice (see CMakeLists.txt): with -O2 -fno-omit-frame-pointer and without CET
 * (GWT_SUFFIX=plain), and with -fcf-protection=full so functions start with endbr64
 * (GWT_SUFFIX=cet). It is never called with frame pointers mattering; only its bytes are used.
 *
 * gwt_func has every position the repair handles: push rbp; mov rbp, rsp; a call; pop rbp; ret;
 * and pop rbp; jmp (the tail call). */
#define GWT_CAT2(a, b) a##_##b
#define GWT_CAT(a, b)  GWT_CAT2(a, b)
#define GWT_NAME(n)    GWT_CAT(n, GWT_SUFFIX)

int gwt_sink(int x);
int GWT_NAME(gwt_func)(int x);

__attribute__((noinline)) int GWT_NAME(gwt_func)(int x)
{
    int y = gwt_sink(x) + 1;
    if (y > 100)
        return gwt_sink(y);
    return y * 3;
}

/* Padding so that reading a fixed window past gwt_func stays inside this object's text. */
int GWT_NAME(gwt_pad)(const int *p, int n);
__attribute__((noinline)) int GWT_NAME(gwt_pad)(const int *p, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += gwt_sink(p[i] * 7 + i) ^ (s >> 3);
    for (int i = 0; i < n; i++)
        s += gwt_sink(p[n - i - 1] - i) * (s | 1);
    return s;
}
