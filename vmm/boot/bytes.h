/* Unaligned little-endian loads/stores (the host and every format here are little-endian x86). */
#pragma once

#include <stdint.h>
#include <string.h>

static inline uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline void st8(uint8_t *p, uint8_t v)
{
    *p = v;
}

static inline void st16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof(v));
}

static inline void st32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, sizeof(v));
}

static inline void st64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, sizeof(v));
}
