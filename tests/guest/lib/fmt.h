/* printf-lite shared by the guest kernel and the guest libc (freestanding, no floating point). */
#pragma once

#include <stdarg.h>
#include <stddef.h>

/* Conversions: %d %i %u %x %X %p %s %c %%, length modifiers l, ll, z, a field width and the
 * '0', '-' and '#' (0x prefix) flags. Always NUL-terminates when size > 0; returns the length it
 * wanted. */
int fmt_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
