/* Demangling through libiberty's cplus_demangle (DMGL_AUTO: the Itanium C++ ABI's names, and
 * Rust's, whose legacy form is an Itanium name ending in a hash the demangler drops), and the
 * parameter list taken off for the short form. */
#include "symbolize/demangle.h"

#include <libiberty/demangle.h>
#include <stdbool.h>
#include <string.h>

/* Longer names are left as they are: a hostile symbol table's 64 KiB name would cost the
 * demangler's recursion, for no one's reading. */
#define DEMANGLE_MAX_LEN 4096

char *hv_demangle(const char *name)
{
    /* Itanium names start "_Z" (Itanium C++ ABI, 5.1.2 "General Structure"), Rust v0 "_R" (RFC
     * 2603); anything else is a C name, left alone without asking the demangler. */
    if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') ||
        strnlen(name, DEMANGLE_MAX_LEN + 1) > DEMANGLE_MAX_LEN)
        return NULL;
    return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

static bool ends_with(const char *s, size_t n, const char *tail)
{
    size_t t = strlen(tail);
    return n >= t && !memcmp(s + n - t, tail, t);
}

size_t hv_demangled_short_len(const char *name)
{
    size_t n = strlen(name);
    /* GCC's clones of a function (".cold", ".isra.0", ".constprop.0") demangle to a suffix. */
    const char *clone = strstr(name, " [clone ");
    if (clone)
        n = (size_t)(clone - name);
    for (bool more = true; more;) {
        more = false;
        static const char *const quals[] = {" const", " volatile", " &&", " &", " noexcept"};
        for (size_t i = 0; i < sizeof(quals) / sizeof(quals[0]); i++)
            if (ends_with(name, n, quals[i])) {
                n -= strlen(quals[i]);
                more = true;
            }
    }
    if (n == 0 || name[n - 1] != ')')
        return clone ? n : strlen(name);
    /* The '(' that opens the last parameter list. */
    int depth = 0;
    for (size_t i = n; i-- > 0;) {
        if (name[i] == ')')
            depth++;
        else if (name[i] == '(' && --depth == 0)
            return i ? i : strlen(name);
    }
    return strlen(name); /* unbalanced: not a demangled name */
}
