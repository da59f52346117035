/* libFuzzer: HotSpot's VMStructs tables as a hostile JVM could hold them, read as the profiler
 * reads a guest's (docs/java.md). The input is the memory at BASE: its first HS_SYM_COUNT words
 * are the exported variables (the four tables' pointers, their entries' offsets and strides),
 * whatever they point to follows; every read outside it fails. A read either fails with an
 * error or gives tables whose every name is printable, NUL-terminated and inside the pool. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "java/hs_vmstructs.h"

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

static void name_ok(const struct hs_vmstructs *vs, uint32_t at)
{
    if (at >= vs->pool_len)
        abort();
    size_t n = strnlen(vs->pool + at, vs->pool_len - at);
    if (n == vs->pool_len - at || n >= HS_MAX_NAME)
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)vs->pool[at + i] < 0x20 || vs->pool[at + i] == 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct image im = {data, size};
    struct rt_mem m = {rd, &im};
    uint64_t addr[HS_SYM_COUNT];
    for (unsigned k = 0; k < HS_SYM_COUNT; k++)
        addr[k] = BASE + 8 * k;
    struct hs_vmstructs vs;
    struct hv_err err = {0};
    if (hs_vmstructs_read(&vs, &m, addr, &err) < 0) {
        if (vs.fields || vs.pool || !err.msg[0])
            abort();
        return 0;
    }
    if (vs.nfields + vs.ntypes + vs.nints + vs.nlongs > 4 * (size_t)HS_MAX_ENTRIES)
        abort();
    for (size_t i = 0; i < vs.nfields; i++) {
        name_ok(&vs, vs.fields[i].type);
        name_ok(&vs, vs.fields[i].name);
        name_ok(&vs, vs.fields[i].type_string);
    }
    for (size_t i = 0; i < vs.ntypes; i++) {
        name_ok(&vs, vs.types[i].name);
        name_ok(&vs, vs.types[i].super);
    }
    for (size_t i = 0; i < vs.nints; i++)
        name_ok(&vs, vs.ints[i].name);
    for (size_t i = 0; i < vs.nlongs; i++)
        name_ok(&vs, vs.longs[i].name);
    uint64_t v;
    (void)hs_offset(&vs, "Method", "_constMethod", &v);
    (void)hs_type_size(&vs, "Method", &v);
    hs_vmstructs_free(&vs);
    return 0;
}
