/* printf-lite: see fmt.h. */
#include "lib/fmt.h"

#include <stdint.h>

struct out {
    char *buf;
    size_t size;
    size_t len;
};

static void put(struct out *o, char c)
{
    if (o->len + 1 < o->size)
        o->buf[o->len] = c;
    o->len++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width, int left, char pad)
{
    int fill = width > (int)n ? width - (int)n : 0;
    if (!left)
        while (fill-- > 0)
            put(o, pad);
    for (size_t i = 0; i < n; i++)
        put(o, s[i]);
    if (left)
        while (fill-- > 0)
            put(o, ' ');
}

static void put_num(struct out *o, uint64_t v, int neg, unsigned base, int upper, int width,
                    int left, char pad)
{
    char tmp[24];
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    size_t n = 0;
    do {
        tmp[sizeof(tmp) - 1 - n++] = digits[v % base];
        v /= base;
    } while (v);
    if (neg) {
        if (pad == '0') {
            put(o, '-');
            width--;
        } else {
            tmp[sizeof(tmp) - 1 - n++] = '-';
        }
    }
    put_padded(o, tmp + sizeof(tmp) - n, n, width, left, pad);
}

int fmt_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct out o = {buf, size, 0};
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            put(&o, *p);
            continue;
        }
        p++;
        int left = 0, alt = 0;
        char pad = ' ';
        for (;; p++) {
            if (*p == '-')
                left = 1;
            else if (*p == '#')
                alt = 1;
            else if (*p == '0')
                pad = '0';
            else
                break;
        }
        int width = 0;
        while (*p >= '0' && *p <= '9')
            width = width * 10 + (*p++ - '0');
        int lng = 0;
        while (*p == 'l' || *p == 'z') {
            lng = 1;
            p++;
        }
        switch (*p) {
        case 'd':
        case 'i': {
            int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
            put_num(&o, v < 0 ? -(uint64_t)v : (uint64_t)v, v < 0, 10, 0, width, left, pad);
            break;
        }
        case 'u':
            put_num(&o, lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 0, 10, 0, width, left,
                    pad);
            break;
        case 'x':
        case 'X': {
            uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
            if (alt && v) {
                put(&o, '0');
                put(&o, *p);
                width -= 2;
            }
            put_num(&o, v, 0, 16, *p == 'X', width, left, pad);
            break;
        }
        case 'p':
            put(&o, '0');
            put(&o, 'x');
            put_num(&o, (uint64_t)(uintptr_t)va_arg(ap, void *), 0, 16, 0, width, left, pad);
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            size_t n = 0;
            while (s[n])
                n++;
            put_padded(&o, s, n, width, left, ' ');
            break;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            put_padded(&o, &c, 1, width, left, ' ');
            break;
        }
        case '%':
            put(&o, '%');
            break;
        case '\0':
            p--;
            break;
        default:
            put(&o, '%');
            put(&o, *p);
            break;
        }
    }
    if (size)
        o.buf[o.len < size ? o.len : size - 1] = '\0';
    return (int)o.len;
}

int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}
