#include "sampler/exit/id_table.h"

#include <string.h>

void id_table_init(struct id_table *t)
{
    memset(t, 0, sizeof(*t));
}

/* 64-bit mix (splitmix64 finaliser constants) so that page-aligned roots spread over slots. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint32_t id_proc_get(struct id_table *t, uint64_t proc_key, const struct id_proc_info *info)
{
    uint64_t key = proc_key + 1;
    uint64_t h = mix64(key);
    for (unsigned i = 0; i < ID_PROBES; i++) {
        uint32_t slot = (uint32_t)((h + i) & (ID_MAX_PROCS - 1));
        struct id_proc *p = &t->procs[slot];
        uint64_t cur = atomic_load_explicit(&p->key, memory_order_acquire);
        if (cur == key)
            return slot + 1;
        if (cur == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong_explicit(
                    &p->key, &expected, key, memory_order_acq_rel, memory_order_acquire)) {
                p->info = *info;
                atomic_store_explicit(&p->ready, 1, memory_order_release);
                return slot + 1;
            }
            if (expected == key) /* another vCPU inserted the same address space */
                return slot + 1;
        }
    }
    atomic_fetch_add_explicit(&t->full, 1, memory_order_relaxed);
    return 0;
}

uint32_t id_thread_get(struct id_table *t, uint32_t proc, uint64_t thread_key, uint64_t ts)
{
    /* One word of key, so that claiming a slot is a single CAS: the process id (1..1024, 10
     * bits) above the low 54 bits of the thread key. User FS bases are canonical lower-half
     * addresses (< 2^47, or 2^56 with LA57) and Linux tids are below 2^22 (PID_MAX_LIMIT), so
     * two distinct real threads never share a key; only FS bases that differ above bit 53 fold
     * together. */
    uint64_t key = ((uint64_t)proc << 54) | (thread_key & ((1ull << 54) - 1));
    uint64_t h = mix64(key);
    for (unsigned i = 0; i < ID_PROBES; i++) {
        uint32_t slot = (uint32_t)((h + i) & (ID_MAX_THREADS - 1));
        struct id_thread *th = &t->threads[slot];
        uint64_t cur = atomic_load_explicit(&th->key, memory_order_acquire);
        if (cur == key)
            return slot + 1;
        if (cur == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong_explicit(
                    &th->key, &expected, key, memory_order_acq_rel, memory_order_acquire)) {
                th->proc = proc;
                th->thread_key = thread_key;
                th->first_ts = ts;
                atomic_store_explicit(&th->ready, 1, memory_order_release);
                return slot + 1;
            }
            if (expected == key)
                return slot + 1;
        }
    }
    atomic_fetch_add_explicit(&t->full, 1, memory_order_relaxed);
    return 0;
}

const struct id_proc *id_proc_at(const struct id_table *t, uint32_t id)
{
    if (id == 0 || id > ID_MAX_PROCS)
        return NULL;
    const struct id_proc *p = &t->procs[id - 1];
    return atomic_load_explicit(&p->ready, memory_order_acquire) ? p : NULL;
}

const struct id_thread *id_thread_at(const struct id_table *t, uint32_t id)
{
    if (id == 0 || id > ID_MAX_THREADS)
        return NULL;
    const struct id_thread *th = &t->threads[id - 1];
    return atomic_load_explicit(&th->ready, memory_order_acquire) ? th : NULL;
}

void id_thread_mark_user(struct id_table *t, uint32_t id)
{
    if (id == 0 || id > ID_MAX_THREADS)
        return;
    struct id_thread *th = &t->threads[id - 1];
    if (!atomic_load_explicit(&th->seen_user, memory_order_relaxed))
        atomic_store_explicit(&th->seen_user, true, memory_order_relaxed);
}

bool id_thread_is_user(const struct id_table *t, uint32_t id)
{
    if (id == 0 || id > ID_MAX_THREADS)
        return false;
    return atomic_load_explicit(&t->threads[id - 1].seen_user, memory_order_relaxed);
}

_Atomic uint64_t *id_thread_cont(struct id_table *t, uint32_t id)
{
    if (id == 0 || id > ID_MAX_THREADS)
        return NULL;
    return &t->threads[id - 1].cont;
}

struct id_label *id_proc_label(struct id_table *t, uint32_t id)
{
    return id == 0 || id > ID_MAX_PROCS ? NULL : &t->procs[id - 1].label;
}

struct id_label *id_thread_label(struct id_table *t, uint32_t id)
{
    return id == 0 || id > ID_MAX_THREADS ? NULL : &t->threads[id - 1].label;
}
