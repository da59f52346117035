/* libFuzzer: a JVM's code cache, methods and stack as a hostile process could hold them, read as
 * the profiler reads a guest's (docs/java.md). The layout is JDK 17's own (fixed here as the
 * tables would give it); the input is the memory at BASE: its first words are the statics (the
 * code cache's bounds and heaps, the interpreter's queue, the call stub's return address, the
 * threads list) and a thread's registers, whatever they point to follows. The walk, every
 * frame's method and line, the blob scan and the thread list must stay bounded and in bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "java/fuzz/jdk17_layout.h"
#include "java/hs_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct image {
    const uint8_t *p;
    size_t n;
};

static bool rd(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct image *im = ctx;
    if (va < HS_IMAGE_BASE || va - HS_IMAGE_BASE > im->n || len > im->n - (va - HS_IMAGE_BASE))
        return false;
    memcpy(dst, im->p + (va - HS_IMAGE_BASE), len);
    return true;
}

static bool count_blob(void *ctx, uint64_t blob)
{
    (void)blob;
    return ++*(unsigned *)ctx < 4096;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 72)
        return 0;
    struct image im = {data, size};
    struct rt_mem m = {rd, &im};
    struct hs_layout l = hs_jdk17_layout(HS_IMAGE_BASE);
    l.stream_excluded = data[size - 1] & 1; /* both codings of the compressed streams */
    struct hs_code_cache cc;
    struct hv_err err = {0};
    if (hs_code_cache_read(&cc, &l, &m, &err) < 0)
        return 0;
    if (cc.nheaps > HS_MAX_HEAPS)
        abort();
    struct hs_regs r;
    memcpy(&r, data + 48, sizeof(r));
    struct hs_frame f[64];
    unsigned n = hs_walk(&cc, &l, &m, &r, f, 64);
    if (n > 64)
        abort();
    for (unsigned i = 0; i < n; i++) {
        struct hs_method_info mi;
        if (f[i].kind != HS_FRAME_STUB && hs_method_read(&l, &m, f[i].code, &mi)) {
            if (strnlen(mi.klass, sizeof(mi.klass)) == sizeof(mi.klass) ||
                strnlen(mi.name, sizeof(mi.name)) == sizeof(mi.name))
                abort();
            (void)hs_method_line(&l, &m, f[i].code, f[i].bci);
        }
    }
    unsigned blobs = 0;
    hs_blobs_each(&cc, &l, &m, 4096, count_blob, &blobs);
    struct hs_thread th[64];
    if (hs_threads(&l, &m, th, 64) > 64)
        abort();
    return 0;
}
