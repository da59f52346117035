#include "common/vector.h"

#include <stdint.h>

void *hv_vec_grow(void *v, size_t *cap, size_t need, size_t elem)
{
    size_t c = *cap ? *cap : VEC_MIN_CAP;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return NULL;
    void *nv = realloc(v, c * elem);
    if (nv)
        *cap = c;
    return nv;
}
