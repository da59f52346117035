/* Guest command line: space-separated key=value words (docs/test-guest.md lists the keys). */
#include "kernel.h"

struct guest_config config;

void cmdline_parse(const char *s, size_t len)
{
    if (len >= sizeof(config.cmdline))
        len = sizeof(config.cmdline) - 1;
    memcpy(config.cmdline, s, len);
    config.cmdline[len] = '\0';
}

/* Copies the value of the last `key=` word into out; false if absent. */
bool cmdline_get(const char *key, char *out, size_t outsz)
{
    size_t klen = strlen(key);
    bool found = false;
    const char *p = config.cmdline;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *w = p;
        while (*p && *p != ' ')
            p++;
        if ((size_t)(p - w) > klen && !strncmp(w, key, klen) && w[klen] == '=') {
            size_t n = (size_t)(p - w) - klen - 1;
            if (n >= outsz)
                n = outsz - 1;
            memcpy(out, w + klen + 1, n);
            out[n] = '\0';
            found = true;
        }
    }
    return found;
}

long cmdline_int(const char *key, long def)
{
    char v[32];
    if (!cmdline_get(key, v, sizeof(v)) || !v[0])
        return def;
    long r = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9' || r > 100000000000L)
            return def;
        r = r * 10 + (*p - '0');
    }
    return r;
}
