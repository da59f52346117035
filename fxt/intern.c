/* Per-provider string/thread interning with fixed tables (see intern.h). */
#include "fxt/intern.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_bytes(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static uint32_t hash_koids(uint64_t pid, uint64_t tid)
{
    uint64_t x = pid * 0x9e3779b97f4a7c15ull ^ (tid + 0x632be59bd9b4e019ull);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x ^ (x >> 32));
}

int fxt_intern_init(struct fxt_intern *t, uint32_t max_strings, uint32_t max_threads,
                    uint32_t pool_bytes, struct hv_err *err)
{
    memset(t, 0, sizeof(*t));
    if (max_strings > FXT_STRING_INDEX_MAX || max_threads > FXT_THREAD_INDEX_MAX)
        return hv_errf(err, "fxt intern: limits %u strings / %u threads exceed 0x7fff / 0xff",
                       max_strings, max_threads);
    uint32_t slots = 16;
    while (slots < 2 * max_strings)
        slots *= 2;
    t->strs = calloc(slots, sizeof(*t->strs));
    t->pool = malloc(pool_bytes ? pool_bytes : 1);
    if (!t->strs || !t->pool) {
        fxt_intern_destroy(t);
        return hv_errf_errno(err, "fxt intern: allocating tables");
    }
    t->str_slots = slots;
    t->str_max = max_strings;
    t->pool_size = pool_bytes;
    t->thr_max = max_threads;
    return 0;
}

void fxt_intern_destroy(struct fxt_intern *t)
{
    free(t->strs);
    free(t->pool);
    t->strs = NULL;
    t->pool = NULL;
}

struct fxt_str fxt_intern_str(struct fxt_intern *t, const char *s, size_t len, uint64_t *buf,
                              size_t cap, size_t *nwords)
{
    *nwords = 0;
    struct fxt_str inl = {.s = s, .len = (uint16_t)(len > FXT_STRING_LEN_MAX ? 0 : len)};
    if (len == 0 || len > FXT_STRING_LEN_MAX)
        return inl; /* empty, or too long for any ref: caller's encoder rejects the latter */
    uint32_t mask = t->str_slots - 1;
    for (uint32_t i = hash_bytes(s, len) & mask;; i = (i + 1) & mask) {
        struct fxt_intern_str_slot *e = &t->strs[i];
        if (!e->index) {
            if (t->str_count >= t->str_max || len > t->pool_size - t->pool_used)
                return inl;
            uint16_t index = (uint16_t)(t->str_count + 1);
            size_t n = fxt_enc_string(buf, cap, index, s, len);
            if (!n)
                return inl;
            memcpy(t->pool + t->pool_used, s, len);
            *e = (struct fxt_intern_str_slot){
                .off = t->pool_used, .len = (uint16_t)len, .index = index};
            t->pool_used += (uint32_t)len;
            t->str_count++;
            *nwords = n;
            return fxt_str_index(index);
        }
        if (e->len == len && !memcmp(t->pool + e->off, s, len))
            return fxt_str_index(e->index);
    }
}

struct fxt_thread fxt_intern_thread(struct fxt_intern *t, uint64_t pid, uint64_t tid, uint64_t *buf,
                                    size_t cap, size_t *nwords)
{
    *nwords = 0;
    struct fxt_thread inl = {.index = 0, .pid = pid, .tid = tid};
    const uint32_t mask = sizeof(t->thr) / sizeof(t->thr[0]) - 1;
    for (uint32_t i = hash_koids(pid, tid) & mask;; i = (i + 1) & mask) {
        struct fxt_intern_thr_slot *e = &t->thr[i];
        if (!e->index) {
            if (t->thr_count >= t->thr_max)
                return inl;
            uint8_t index = (uint8_t)(t->thr_count + 1);
            size_t n = fxt_enc_thread(buf, cap, index, pid, tid);
            if (!n)
                return inl;
            *e = (struct fxt_intern_thr_slot){.pid = pid, .tid = tid, .index = index};
            t->thr_count++;
            *nwords = n;
            return (struct fxt_thread){.index = index, .pid = pid, .tid = tid};
        }
        if (e->pid == pid && e->tid == tid)
            return (struct fxt_thread){.index = e->index, .pid = pid, .tid = tid};
    }
}
