/* A typed growable array, the one hvprof uses everywhere (drgn's libdrgn/vector.h is the idea;
 * this is a smaller C11 form with GNU statement expressions):
 *
 *   VECTOR(uint64_t) pcs = {0};           // struct { uint64_t *v; size_t n, cap; }
 *   uint64_t *slot = vec_push(&pcs);      // one more element, uninitialised; NULL: no memory
 *   if (!vec_append(&pcs, 42)) ...        // the same with a value; false: no memory
 *   if (!vec_reserve(&pcs, 100)) ...      // room for 100 more, nothing added
 *   if (!vec_extend(&pcs, src, 8)) ...    // 8 elements copied from src
 *   vec_free(&pcs);                       // back to {0}
 *
 * Growth doubles (from VEC_MIN_CAP), and a size whose bytes would overflow size_t fails like an
 * allocation does: callers that read untrusted input still bound the count themselves (a
 * hostile file may not make hvprof take all of memory), this only keeps the arithmetic honest.
 * A named type for a struct field or a parameter: `struct u64_vec VECTOR(uint64_t);` is not C,
 * so declare `typedef VECTOR(uint64_t) u64_vec;` or `struct name { VECTOR_FIELDS(T); }`. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define VEC_MIN_CAP 16

#define VECTOR_FIELDS(T)                                                                           \
    T *v;                                                                                          \
    size_t n, cap
#define VECTOR(T)                                                                                  \
    struct {                                                                                       \
        VECTOR_FIELDS(T);                                                                          \
    }

/* The array `v` (cap elements of elem bytes) grown to hold at least `need`: the new array, or
 * NULL with v untouched (no memory, or a size past SIZE_MAX). *cap is updated on success. */
void *hv_vec_grow(void *v, size_t *cap, size_t need, size_t elem);
/* The same for an array that may never hold more than `max` elements: NULL when need > max,
 * and the capacity never goes past max (a bounded table does not take twice its bound). */
void *hv_vec_grow_max(void *v, size_t *cap, size_t need, size_t elem, size_t max);

#define vec_reserve(vec, extra)                                                                    \
    ({                                                                                             \
        __typeof__(vec) vr_ = (vec);                                                               \
        size_t extra_ = (extra);                                                                   \
        bool vr_ok_ = extra_ <= (size_t)-1 - vr_->n;                                               \
        if (vr_ok_ && vr_->n + extra_ > vr_->cap) {                                                \
            void *nv_ = hv_vec_grow(vr_->v, &vr_->cap, vr_->n + extra_, sizeof(*vr_->v));          \
            if (nv_)                                                                               \
                vr_->v = nv_;                                                                      \
            else                                                                                   \
                vr_ok_ = false;                                                                    \
        }                                                                                          \
        vr_ok_;                                                                                    \
    })

#define vec_push(vec)                                                                              \
    ({                                                                                             \
        __typeof__(vec) vp_ = (vec);                                                               \
        vec_reserve(vp_, 1) ? &vp_->v[vp_->n++] : NULL;                                            \
    })

#define vec_append(vec, value)                                                                     \
    ({                                                                                             \
        __typeof__(vec) va_ = (vec);                                                               \
        __typeof__(va_->v) slot_ = vec_push(va_);                                                  \
        if (slot_)                                                                                 \
            *slot_ = (value);                                                                      \
        slot_ != NULL;                                                                             \
    })

/* Append `count` elements copied from `src`: false (nothing added) when there is no memory. */
#define vec_extend(vec, src, count)                                                                \
    ({                                                                                             \
        __typeof__(vec) ve_ = (vec);                                                               \
        size_t count_ = (count);                                                                   \
        bool ve_ok_ = vec_reserve(ve_, count_);                                                    \
        if (ve_ok_ && count_) {                                                                    \
            memcpy(ve_->v + ve_->n, (src), count_ * sizeof(*ve_->v));                              \
            ve_->n += count_;                                                                      \
        }                                                                                          \
        ve_ok_;                                                                                    \
    })

#define vec_free(vec)                                                                              \
    do {                                                                                           \
        __typeof__(vec) vf_ = (vec);                                                               \
        free(vf_->v);                                                                              \
        vf_->v = NULL;                                                                             \
        vf_->n = vf_->cap = 0;                                                                     \
    } while (0)
