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

/* The word a process key is stored as: key + 1 (key 0, a kernel thread's, is a key), never 0
 * and never with both bits 63 and 62 set (the markers'): only a hostile tgid could make a Linux
 * key so, and it then folds onto another's. */
static uint64_t proc_word(uint64_t key)
{
    uint64_t w = key + 1;
    if ((w >> 62) == 3)
        w &= ~(1ull << 62);
    return w ? w : 1ull << 63;
}

/* One word of key, so that claiming a slot is a single CAS: the process id (1..1024, 10 bits,
 * less one) above the low 52 bits of the thread key, bits 62 and 63 clear. User FS bases are
 * canonical lower-half addresses (< 2^47; with LA57 < 2^56, whose bits above 51 fold together)
 * and Linux tids are below 2^22 (PID_MAX_LIMIT), so two distinct real threads share a key only
 * there. */
static uint64_t thread_word(uint32_t proc, uint64_t thread_key)
{
    return (((uint64_t)(proc - 1) << 52) | (thread_key & ((1ull << 52) - 1))) + 1;
}

/* The slot of a live copy of `w` before slot `claim` on its probe path, or -1. */
static long earlier_copy(_Atomic uint64_t *keys, size_t stride, uint32_t mask, uint64_t w,
                         uint64_t h, uint32_t claim)
{
    for (unsigned i = 0; i < ID_PROBES; i++) {
        uint32_t slot = (uint32_t)((h + i) & mask);
        if (slot == claim)
            return -1;
        _Atomic uint64_t *k = (_Atomic uint64_t *)((char *)keys + (size_t)slot * stride);
        if (atomic_load_explicit(k, memory_order_acquire) == w)
            return slot;
    }
    return -1;
}

/* The slot of `w` in the table whose key words are `keys` (a stride apart), claimed for it if
 * it is new: the first freed or never-used slot of its probe path. *fresh says the caller
 * claimed it (and must publish it). -1: no slot within ID_PROBES.
 *
 * Two stops of a new key may claim two slots when the drain thread frees one on its path between
 * their probes; the later claimer finds the earlier copy and ends its own (the drain thread gives
 * it back). Only a race of three (two claimers probing around a third's claim) leaves two live
 * copies: both carry the same label, and the drain thread ends the one no stop finds. */
static long find_or_claim(_Atomic uint64_t *keys, size_t stride, uint32_t mask, uint64_t w,
                          bool *fresh)
{
    uint64_t h = mix64(w);
    *fresh = false;
    for (unsigned attempt = 0; attempt < 8; attempt++) {
        long claim = -1;
        uint64_t seen = 0;
        for (unsigned i = 0; i < ID_PROBES; i++) {
            uint32_t slot = (uint32_t)((h + i) & mask);
            _Atomic uint64_t *k = (_Atomic uint64_t *)((char *)keys + (size_t)slot * stride);
            uint64_t cur = atomic_load_explicit(k, memory_order_acquire);
            if (cur == w)
                return slot;
            if (cur == 0) {
                if (claim < 0) {
                    claim = slot;
                    seen = 0;
                }
                break;
            }
            if (cur == ID_KEY_FREE && claim < 0) {
                claim = slot;
                seen = ID_KEY_FREE;
            }
        }
        if (claim < 0)
            return -1;
        _Atomic uint64_t *k = (_Atomic uint64_t *)((char *)keys + (size_t)claim * stride);
        uint64_t expected = seen;
        if (atomic_compare_exchange_strong_explicit(k, &expected, w, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            long other = earlier_copy(keys, stride, mask, w, h, (uint32_t)claim);
            if (other < 0) {
                *fresh = true;
                return claim;
            }
            atomic_store_explicit(k, ID_KEY_ENDED, memory_order_release);
            return other;
        }
        if (expected == w) /* another vCPU inserted the same key */
            return claim;
    }
    return -1;
}

uint32_t id_proc_get(struct id_table *t, uint64_t proc_key, const struct id_proc_info *info)
{
    bool fresh;
    long slot = find_or_claim(&t->procs[0].key, sizeof(t->procs[0]), ID_MAX_PROCS - 1,
                              proc_word(proc_key), &fresh);
    if (slot < 0) {
        atomic_fetch_add_explicit(&t->full, 1, memory_order_relaxed);
        return 0;
    }
    struct id_proc *p = &t->procs[slot];
    if (fresh) {
        p->info = *info;
        atomic_store_explicit(&p->last_ts, info->first_ts, memory_order_relaxed);
        atomic_store_explicit(&p->ready, 1, memory_order_release);
    }
    return (uint32_t)slot + 1;
}

uint32_t id_thread_get(struct id_table *t, uint32_t proc, uint64_t thread_key, uint64_t ts)
{
    if (!proc || proc > ID_MAX_PROCS)
        return 0;
    bool fresh;
    long slot = find_or_claim(&t->threads[0].key, sizeof(t->threads[0]), ID_MAX_THREADS - 1,
                              thread_word(proc, thread_key), &fresh);
    if (slot < 0) {
        atomic_fetch_add_explicit(&t->full, 1, memory_order_relaxed);
        return 0;
    }
    struct id_thread *th = &t->threads[slot];
    if (fresh) {
        th->proc = proc;
        th->thread_key = thread_key;
        th->first_ts = ts;
        atomic_store_explicit(&th->last_ts, ts, memory_order_relaxed);
        atomic_store_explicit(&th->ready, 1, memory_order_release);
    }
    return (uint32_t)slot + 1;
}

static long find(const _Atomic uint64_t *keys, size_t stride, uint32_t mask, uint64_t w)
{
    uint64_t h = mix64(w);
    for (unsigned i = 0; i < ID_PROBES; i++) {
        uint32_t slot = (uint32_t)((h + i) & mask);
        const _Atomic uint64_t *k =
            (const _Atomic uint64_t *)((const char *)keys + (size_t)slot * stride);
        uint64_t cur = atomic_load_explicit(k, memory_order_acquire);
        if (cur == w)
            return slot;
        if (cur == 0)
            return -1;
    }
    return -1;
}

uint32_t id_proc_find(const struct id_table *t, uint64_t key)
{
    long slot = find(&t->procs[0].key, sizeof(t->procs[0]), ID_MAX_PROCS - 1, proc_word(key));
    return slot < 0 ? 0 : (uint32_t)slot + 1;
}

uint32_t id_thread_find(const struct id_table *t, uint32_t proc, uint64_t thread_key)
{
    if (!proc || proc > ID_MAX_PROCS)
        return 0;
    long slot = find(&t->threads[0].key, sizeof(t->threads[0]), ID_MAX_THREADS - 1,
                     thread_word(proc, thread_key));
    return slot < 0 ? 0 : (uint32_t)slot + 1;
}

static bool live_word(uint64_t w)
{
    return w && w != ID_KEY_ENDED && w != ID_KEY_FREE;
}

bool id_proc_live(const struct id_table *t, uint32_t id)
{
    return id && id <= ID_MAX_PROCS &&
           live_word(atomic_load_explicit(&t->procs[id - 1].key, memory_order_acquire));
}

bool id_thread_live(const struct id_table *t, uint32_t id)
{
    return id && id <= ID_MAX_THREADS &&
           live_word(atomic_load_explicit(&t->threads[id - 1].key, memory_order_acquire));
}

static bool end_key(_Atomic uint64_t *k)
{
    uint64_t cur = atomic_load_explicit(k, memory_order_acquire);
    while (live_word(cur))
        if (atomic_compare_exchange_weak_explicit(k, &cur, ID_KEY_ENDED, memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    return false;
}

bool id_proc_end(struct id_table *t, uint32_t id)
{
    return id && id <= ID_MAX_PROCS && end_key(&t->procs[id - 1].key);
}

bool id_thread_end(struct id_table *t, uint32_t id)
{
    return id && id <= ID_MAX_THREADS && end_key(&t->threads[id - 1].key);
}

void id_proc_release(struct id_table *t, uint32_t id)
{
    if (!id || id > ID_MAX_PROCS)
        return;
    struct id_proc *p = &t->procs[id - 1];
    if (atomic_load_explicit(&p->key, memory_order_acquire) != ID_KEY_ENDED)
        return;
    atomic_store_explicit(&p->ready, 0, memory_order_relaxed);
    memset(&p->info, 0, sizeof(p->info));
    memset(&p->label, 0, sizeof(p->label));
    atomic_store_explicit(&p->last_ts, 0, memory_order_relaxed);
    atomic_store_explicit(&p->last_user_ts, 0, memory_order_relaxed);
    atomic_store_explicit(&p->unknown_code_ts, 0, memory_order_relaxed);
    atomic_store_explicit(&p->copies, 0, memory_order_relaxed);
    uint32_t gen = atomic_load_explicit(&p->gen, memory_order_relaxed);
    atomic_store_explicit(&p->gen, (gen + 1) % ID_PROC_GENERATIONS, memory_order_relaxed);
    /* Release: whoever claims the slot sees it clean and its new generation. */
    atomic_store_explicit(&p->key, ID_KEY_FREE, memory_order_release);
}

void id_thread_release(struct id_table *t, uint32_t id)
{
    if (!id || id > ID_MAX_THREADS)
        return;
    struct id_thread *th = &t->threads[id - 1];
    if (atomic_load_explicit(&th->key, memory_order_acquire) != ID_KEY_ENDED)
        return;
    atomic_store_explicit(&th->ready, 0, memory_order_relaxed);
    atomic_store_explicit(&th->seen_user, false, memory_order_relaxed);
    atomic_store_explicit(&th->cont, 0, memory_order_relaxed);
    atomic_store_explicit(&th->handle, 0, memory_order_relaxed);
    atomic_store_explicit(&th->ns_info, 0, memory_order_relaxed);
    atomic_store_explicit(&th->ns_ids, 0, memory_order_relaxed);
    atomic_store_explicit(&th->last_ts, 0, memory_order_relaxed);
    th->proc = 0;
    th->thread_key = 0;
    th->first_ts = 0;
    memset(&th->label, 0, sizeof(th->label));
    uint32_t gen = atomic_load_explicit(&th->gen, memory_order_relaxed);
    atomic_store_explicit(&th->gen, (gen + 1) % ID_THREAD_GENERATIONS, memory_order_relaxed);
    atomic_store_explicit(&th->key, ID_KEY_FREE, memory_order_release);
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

_Atomic uint64_t *id_thread_handle(struct id_table *t, uint32_t id)
{
    if (id == 0 || id > ID_MAX_THREADS)
        return NULL;
    return &t->threads[id - 1].handle;
}

void id_thread_set_ns(struct id_table *t, uint32_t id, int32_t ns_tid, int32_t ns_pid,
                      uint32_t pidns, uint32_t level)
{
    if (id == 0 || id > ID_MAX_THREADS)
        return;
    struct id_thread *th = &t->threads[id - 1];
    atomic_store_explicit(&th->ns_ids,
                          (uint64_t)(uint32_t)ns_tid | (uint64_t)(uint32_t)ns_pid << 32,
                          memory_order_relaxed);
    atomic_store_explicit(&th->ns_info, ID_NS_READ | (uint64_t)level << 32 | pidns,
                          memory_order_release);
}

bool id_thread_ns(const struct id_thread *th, int32_t *ns_tid, int32_t *ns_pid, uint32_t *pidns,
                  uint32_t *level)
{
    uint64_t info = atomic_load_explicit(&th->ns_info, memory_order_acquire);
    if (!(info & ID_NS_READ))
        return false;
    uint64_t ids = atomic_load_explicit(&th->ns_ids, memory_order_relaxed);
    *ns_tid = (int32_t)(uint32_t)ids;
    *ns_pid = (int32_t)(uint32_t)(ids >> 32);
    *pidns = (uint32_t)info;
    *level = (uint32_t)(info >> 32) & 0xff;
    return true;
}

struct id_label *id_proc_label(struct id_table *t, uint32_t id)
{
    return id == 0 || id > ID_MAX_PROCS ? NULL : &t->procs[id - 1].label;
}

struct id_label *id_thread_label(struct id_table *t, uint32_t id)
{
    return id == 0 || id > ID_MAX_THREADS ? NULL : &t->threads[id - 1].label;
}
