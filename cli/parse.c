#include "cli/parse.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A decimal number "123" or "123.456": integer part, fraction digits as an integer and its
 * digit count. Returns the first unparsed character, or NULL if not a number / too long. */
static const char *parse_decimal(const char *s, uint64_t *ip, uint64_t *frac, unsigned *fdigits)
{
    *ip = 0;
    *frac = 0;
    *fdigits = 0;
    if (*s < '0' || *s > '9')
        return NULL;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (__builtin_mul_overflow(*ip, 10, ip) ||
            __builtin_add_overflow(*ip, (uint64_t)(*s - '0'), ip))
            return NULL;
    }
    if (*s != '.')
        return s;
    s++;
    if (*s < '0' || *s > '9')
        return NULL; /* "1." is not a number */
    for (; *s >= '0' && *s <= '9'; s++) {
        if (*fdigits == 18)
            return NULL; /* more precision than anything here can use */
        *frac = *frac * 10 + (uint64_t)(*s - '0');
        (*fdigits)++;
    }
    return s;
}

/* ip.frac * mult, exactly. 1: ok, 0: overflow, -1: not a whole number of units. */
static int scale(uint64_t ip, uint64_t frac, unsigned fdigits, uint64_t mult, uint64_t *out)
{
    uint64_t whole;
    if (__builtin_mul_overflow(ip, mult, &whole))
        return 0;
    if (fdigits == 0) {
        *out = whole;
        return 1;
    }
    uint64_t pow10 = 1;
    for (unsigned i = 0; i < fdigits; i++)
        pow10 *= 10;
    /* frac < 10^18 and mult <= 2^40 (sizes) or 3.6e12 (durations): use 128-bit. */
    unsigned __int128 f = (unsigned __int128)frac * mult;
    if (f % pow10)
        return -1;
    uint64_t part = (uint64_t)(f / pow10);
    if (__builtin_add_overflow(whole, part, out))
        return 0;
    return 1;
}

struct unit {
    const char *name;
    uint64_t mult;
};

static const struct unit *find_unit(const struct unit *units, const char *suffix)
{
    for (const struct unit *u = units; u->name; u++)
        if (!strcasecmp(u->name, suffix))
            return u;
    return NULL;
}

typedef void (*format_fn)(uint64_t v, char *buf, unsigned len);

static int parse_with_units(const char *s, const char *what, const char *kind, const char *examples,
                            const char *base_unit, const struct unit *units, uint64_t min,
                            uint64_t max, format_fn fmt, uint64_t *out, struct hv_err *err)
{
    if (!s || !*s)
        return hv_errk(err, HV_ERR_USAGE, "%s: empty value (expected %s, e.g. %s)", what, kind,
                       examples);
    uint64_t ip, frac;
    unsigned fd;
    const char *rest = parse_decimal(s, &ip, &frac, &fd);
    if (!rest)
        return hv_errk(err, HV_ERR_USAGE, "%s: '%.64s' is not %s (e.g. %s)", what, s, kind,
                       examples);
    const struct unit *u = find_unit(units, rest);
    if (!u)
        return hv_errk(err, HV_ERR_USAGE, "%s: '%.64s' is not %s (e.g. %s)", what, s, kind,
                       examples);
    uint64_t v;
    int r = scale(ip, frac, fd, u->mult, &v);
    if (r == 0)
        return hv_errk(err, HV_ERR_USAGE, "%s: '%.64s' is too large", what, s);
    if (r < 0)
        return hv_errk(err, HV_ERR_USAGE, "%s: '%.64s' is not a whole number of %s", what, s,
                       base_unit);
    char lo[32], hi[32];
    fmt(min, lo, sizeof(lo));
    fmt(max, hi, sizeof(hi));
    if (v < min)
        return hv_errk(err, HV_ERR_USAGE, "%s: %.64s is below the minimum %s", what, s, lo);
    if (v > max)
        return hv_errk(err, HV_ERR_USAGE, "%s: %.64s is above the maximum %s", what, s, hi);
    *out = v;
    return 0;
}

static void fmt_plain(uint64_t v, char *buf, unsigned len)
{
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

int parse_uint(const char *s, const char *what, uint64_t min, uint64_t max, uint64_t *out,
               struct hv_err *err)
{
    static const struct unit none[] = {{"", 1}, {NULL, 0}};
    if (s && strchr(s, '.'))
        return hv_errk(err, HV_ERR_USAGE, "%s: '%.64s' is not a whole number", what, s);
    if (!s || !*s)
        return hv_errk(err, HV_ERR_USAGE, "%s: empty value (expected a number)", what);
    uint64_t v = 0;
    if (parse_with_units(s, what, "a number", "4", "units", none, 0, UINT64_MAX, fmt_plain, &v,
                         err) < 0)
        return -1;
    if (v < min || v > max)
        return hv_errk(err, HV_ERR_USAGE, "%s: %.64s is out of range (%llu..%llu)", what, s,
                       (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return 0;
}

void parse_format_size(uint64_t bytes, char *buf, unsigned len)
{
    static const char suffix[] = "KMGTPE";
    int i = -1;
    uint64_t v = bytes;
    while (v && (v & 1023) == 0 && i < 5) {
        v >>= 10;
        i++;
    }
    if (i < 0)
        snprintf(buf, len, "%llu", (unsigned long long)v);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)v, suffix[i]);
}

int parse_size(const char *s, const char *what, uint64_t min, uint64_t max, uint64_t *out,
               struct hv_err *err)
{
    static const struct unit units[] = {
        {"", 1},
        {"B", 1},
        {"K", 1ull << 10},
        {"KB", 1ull << 10},
        {"KiB", 1ull << 10},
        {"M", 1ull << 20},
        {"MB", 1ull << 20},
        {"MiB", 1ull << 20},
        {"G", 1ull << 30},
        {"GB", 1ull << 30},
        {"GiB", 1ull << 30},
        {"T", 1ull << 40},
        {"TB", 1ull << 40},
        {"TiB", 1ull << 40},
        {NULL, 0},
    };
    return parse_with_units(s, what, "a size", "256M, 1G, 4096", "bytes", units, min, max,
                            parse_format_size, out, err);
}

static void fmt_hz(uint64_t v, char *buf, unsigned len)
{
    snprintf(buf, len, "%llu Hz", (unsigned long long)v);
}

int parse_freq_hz(const char *s, const char *what, uint64_t min, uint64_t max, uint64_t *out,
                  struct hv_err *err)
{
    static const struct unit units[] = {
        {"", 1}, {"Hz", 1}, {"k", 1000}, {"kHz", 1000}, {"M", 1000000}, {"MHz", 1000000}, {NULL, 0},
    };
    return parse_with_units(s, what, "a frequency", "1000, 4kHz, 100Hz", "Hz", units, min, max,
                            fmt_hz, out, err);
}

static void fmt_ns(uint64_t v, char *buf, unsigned len)
{
    if (v % 1000000000ull == 0)
        snprintf(buf, len, "%llus", (unsigned long long)(v / 1000000000ull));
    else if (v % 1000000ull == 0)
        snprintf(buf, len, "%llums", (unsigned long long)(v / 1000000ull));
    else if (v % 1000ull == 0)
        snprintf(buf, len, "%lluus", (unsigned long long)(v / 1000ull));
    else
        snprintf(buf, len, "%lluns", (unsigned long long)v);
}

int parse_duration_ns(const char *s, const char *what, uint64_t min_ns, uint64_t max_ns,
                      uint64_t *out, struct hv_err *err)
{
    static const struct unit units[] = {
        {"", 1000000000ull},
        {"s", 1000000000ull},
        {"ms", 1000000ull},
        {"us", 1000ull},
        {"ns", 1},
        {"m", 60000000000ull},
        {"min", 60000000000ull},
        {"h", 3600000000000ull},
        {NULL, 0},
    };
    return parse_with_units(s, what, "a duration", "2, 1.5s, 500ms", "nanoseconds", units, min_ns,
                            max_ns, fmt_ns, out, err);
}
