/* The few string/memory routines the kernel (and gcc's implicit calls) need. String instructions
 * keep CPL 0 work small: one emulated `rep movsq` instead of a loop of emulated moves. */
#include "kernel.h"

/* The CPL 0 emulator here runs a `rep` string instruction one iteration at a time (~1 us each),
 * so copy 8 bytes per iteration and only the tail bytewise. */
void *memcpy(void *dst, const void *src, size_t n)
{
    void *d = dst;
    size_t q = n / 8, r = n % 8;
    __asm__ volatile("rep movsq\n\t"
                     "mov %[r], %%rcx\n\t"
                     "rep movsb"
                     : "+D"(d), "+S"(src), "+c"(q)
                     : [r] "r"(r)
                     : "memory");
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    void *d = dst;
    __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return dst;
}

void zero_page(void *p)
{
    size_t n = 4096 / 8;
    __asm__ volatile("rep stosq" : "+D"(p), "+c"(n) : "a"(0) : "memory");
}

int memcmp(const void *a, const void *b, size_t n)
{
    const u8 *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return x[i] - y[i];
    return 0;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

int strncmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i])
            return (u8)a[i] - (u8)b[i];
        if (!a[i])
            return 0;
    }
    return 0;
}
