#include "python/py_code.h"

#include <stdlib.h>
#include <string.h>

/* UTF-8 of code point c into out (room for 4); its length. */
static size_t utf8(uint32_t c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

bool py_str_read(const struct py_layout *l, const struct rt_mem *m, uint64_t va, char *out,
                 size_t len)
{
    if (!len)
        return false;
    out[0] = 0;
    uint64_t n;
    uint32_t state;
    if (!rt_read_u64(m, va + l->str_length, &n) || !rt_read(m, va + l->str_state, &state, 4))
        return false;
    /* PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1 (cpython/unicodeobject.h). */
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1) || n > (1u << 20))
        return false;
    uint64_t data = va + (ascii ? l->str_ascii_data : l->str_compact_data);
    size_t at = 0;
    uint8_t buf[256];
    for (uint64_t i = 0; i < n;) {
        uint64_t chunk = (n - i) * kind < sizeof(buf) ? (n - i) : sizeof(buf) / kind;
        if (!rt_read(m, data + i * kind, buf, chunk * kind))
            return false;
        for (uint64_t j = 0; j < chunk; j++) {
            uint32_t c = kind == 1 ? buf[j]
                         : kind == 2
                             ? (uint32_t)buf[2 * j] | (uint32_t)buf[2 * j + 1] << 8
                             : (uint32_t)buf[4 * j] | (uint32_t)buf[4 * j + 1] << 8 |
                                   (uint32_t)buf[4 * j + 2] << 16 | (uint32_t)buf[4 * j + 3] << 24;
            if (c < 0x20 || c == 0x7f || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
                c = '?';
            char enc[4];
            size_t k = utf8(c, enc);
            if (at + k >= len) {
                out[at] = 0;
                return true; /* cut at a character boundary */
            }
            memcpy(out + at, enc, k);
            at += k;
        }
        i += chunk;
    }
    out[at] = 0;
    return true;
}

bool py_code_read(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                  struct py_code_info *out)
{
    const struct py_layout *l = rt->l;
    uint64_t qual, file;
    int32_t first;
    if (!l || !rt_read_u64(m, code + l->code_qualname, &qual) ||
        !rt_read_u64(m, code + l->code_filename, &file) ||
        !rt_read(m, code + l->code_firstlineno, &first, 4) || first < 0 || first > 100000000)
        return false;
    out->firstlineno = first;
    return py_str_read(l, m, qual, out->qualname, sizeof(out->qualname)) &&
           py_str_read(l, m, file, out->filename, sizeof(out->filename));
}

bool py_code_fingerprint(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                         uint64_t fp[3])
{
    const struct py_layout *l = rt->l;
    return l && rt_read_u64(m, code + l->code_qualname, &fp[0]) &&
           rt_read_u64(m, code + l->code_filename, &fp[1]) &&
           rt_read_u64(m, code + l->code_linetable, &fp[2]);
}

/* Objects/locations.md: a varint is 6-bit chunks, least significant first, bit 6 set on all
 * but the last; a signed one keeps its sign in bit 0. */
static bool varint(const uint8_t *t, size_t n, size_t *at, uint32_t *out)
{
    uint32_t v = 0;
    for (unsigned shift = 0; *at < n && shift < 32; shift += 6) {
        uint8_t b = t[(*at)++];
        v |= (uint32_t)(b & 0x3f) << shift;
        if (!(b & 0x40)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static bool svarint(const uint8_t *t, size_t n, size_t *at, int32_t *out)
{
    uint32_t v;
    if (!varint(t, n, at, &v))
        return false;
    *out = (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
    return true;
}

int32_t py_line_of(const uint8_t *t, size_t n, int32_t first, uint64_t index)
{
    int64_t line = first;
    uint64_t addr = 0;
    size_t at = 0;
    while (at < n) {
        uint8_t b = t[at++];
        if (!(b & 0x80))
            return -1; /* every entry starts with its top bit set */
        unsigned code = (b >> 3) & 15, length = (b & 7) + 1;
        int32_t delta = 0;
        uint32_t skip;
        bool none = false;
        if (code == 15) {
            none = true;         /* no location */
        } else if (code == 14) { /* long form: line delta, end line, columns */
            if (!svarint(t, n, &at, &delta) || !varint(t, n, &at, &skip) ||
                !varint(t, n, &at, &skip) || !varint(t, n, &at, &skip))
                return -1;
        } else if (code == 13) { /* no columns */
            if (!svarint(t, n, &at, &delta))
                return -1;
        } else if (code >= 10) { /* one line: delta code - 10, two column bytes */
            delta = (int32_t)code - 10;
            at += 2;
        } else { /* short form: same line, one column byte */
            at += 1;
        }
        if (at > n)
            return -1;
        line += delta;
        if (index >= addr && index < addr + length)
            return none || line < 0 || line > INT32_MAX ? -1 : (int32_t)line;
        addr += length;
    }
    return -1;
}

uint8_t *py_code_linetable(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                           size_t max, size_t *len)
{
    const struct py_layout *l = rt->l;
    uint64_t table, size;
    if (!rt_read_u64(m, code + l->code_linetable, &table) ||
        !rt_read_u64(m, table + l->bytes_size, &size) || size > max || size > PY_LINETABLE_MAX)
        return NULL;
    uint8_t *t = malloc(size ? size : 1);
    if (!t)
        return NULL;
    if (!rt_read(m, table + l->bytes_data, t, size)) {
        free(t);
        return NULL;
    }
    *len = size;
    return t;
}

int32_t py_code_line(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                     uint64_t instr)
{
    const struct py_layout *l = rt->l;
    uint64_t start = code + l->code_adaptive;
    int32_t first;
    size_t size;
    if (instr < start || (instr - start) & 1 || !rt_read(m, code + l->code_firstlineno, &first, 4))
        return -1;
    uint8_t *t = py_code_linetable(rt, m, code, PY_LINETABLE_MAX, &size);
    if (!t)
        return -1;
    int32_t line = py_line_of(t, size, first, (instr - start) / 2);
    free(t);
    return line;
}
