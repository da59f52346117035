/* How a runtime's reader (python/, java/) reads a process's memory: a callback, so that the same
 * code reads a guest process's user memory through its page tables (the drain thread, the exit
 * path) and a host process's for the tests. Every read may fail (a page not present, an address
 * that is no object's): nothing read is trusted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_mem {
    /* Copy len bytes at va into dst; false if any byte cannot be read. */
    bool (*read)(void *ctx, uint64_t va, void *dst, size_t len);
    void *ctx;
};

static inline bool rt_read(const struct rt_mem *m, uint64_t va, void *dst, size_t len)
{
    return va && va + len >= va && m->read(m->ctx, va, dst, len);
}

static inline bool rt_read_u64(const struct rt_mem *m, uint64_t va, uint64_t *out)
{
    return rt_read(m, va, out, 8);
}
