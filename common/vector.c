#include "common/vector.h"

#include <stdint.h>

void *hv_vec_grow_max(void *v, size_t *cap, size_t need, size_t elem, size_t max)
{
    if (need > max)
        return NULL;
    size_t c = *cap ? *cap : VEC_MIN_CAP;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (c > max)
        c = max;
    if (elem && c > SIZE_MAX / elem)
        return NULL;
    void *nv = realloc(v, c * elem);
    if (nv)
        *cap = c;
    return nv;
}

void *hv_vec_grow(void *v, size_t *cap, size_t need, size_t elem)
{
    return hv_vec_grow_max(v, cap, need, elem, SIZE_MAX);
}
