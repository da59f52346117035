/* libFuzzer: a CPython 3.11 interpreter's memory as a hostile process could hold it, read as the
 * profiler reads a guest's (docs/python.md). The input is the memory at BASE (Py_Version, then
 * _PyRuntime, then whatever the pointers in it lead to); every read outside it fails. The
 * thread state of the tid in the input's last 8 bytes, its frames, each frame's code object
 * with names and line, its fingerprint and location table as the recorder reads them: every
 * loop bounded, every name printable and NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/py_code.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x10000000ull

struct image {
    const uint8_t *p;
    size_t n;
};

static bool rd(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct image *im = ctx;
    if (va < BASE || va - BASE > im->n || len > im->n - (va - BASE))
        return false;
    memcpy(dst, im->p + (va - BASE), len);
    return true;
}

static void printable(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == cap)
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 16)
        return 0;
    struct image im = {data, size};
    struct rt_mem m = {rd, &im};
    struct py_runtime rt;
    char why[128];
    /* Py_Version at BASE: a 3.11 one, or the input's word (most are refused). */
    if (py_runtime_open(&rt, &m, BASE + 8, BASE, why, sizeof(why)) < 0)
        return 0;
    int64_t tid;
    memcpy(&tid, data + size - 8, 8);
    uint64_t ts = py_thread_state(&rt, &m, tid, PY_MAX_THREADS);
    if (!ts)
        return 0;
    struct py_frame f[32];
    unsigned n = py_frames(&rt, &m, ts, f, 32);
    if (n > 32)
        abort();
    for (unsigned i = 0; i < n; i++) {
        struct py_code_info ci;
        if (py_code_read(&rt, &m, f[i].code, &ci)) {
            printable(ci.qualname, sizeof(ci.qualname));
            printable(ci.filename, sizeof(ci.filename));
        }
        int32_t line = py_code_line(&rt, &m, f[i].code, f[i].instr);
        if (line < -1)
            abort();
        /* What the recorder reads of it: its fingerprint, its location table (bounded). */
        uint64_t fp[3];
        (void)py_code_fingerprint(&rt, &m, f[i].code, fp);
        size_t tl = 0;
        uint8_t *t = py_code_linetable(&rt, &m, f[i].code, 16384, &tl);
        if (t && tl > 16384)
            abort();
        free(t);
    }
    return 0;
}
