/* Guest identities as the OS layer recognised them (guestos_identify): process = its key
 * (generic: the canonical CR3 root; Linux: the same, or a kernel thread's own key), thread =
 * (process, thread key: the FS base, or the guest's tid). Each carries a label with what the
 * guest kernel says about it (id_label.h: pid or tid, name), when the OS layer can tell.
 * Each gets a small id: its slot in a fixed-size open-addressing table shared by every vCPU
 * thread. Lookup and insert are lock-free (one CAS to claim a slot) and never allocate, so
 * they are safe on the vCPU exit path. Ids are 1-based; 0 means "table full" (counted).
 *
 * Identities follow the guest's own lifecycle (docs/identities.md): the drain thread ends one
 * whose process or thread is gone (id_*_end: its key no longer matches, so the next stop of that
 * key is a new identity), and once no exit that may still hold the old id is running (the exit
 * core's grace, grace.h) gives the slot back (id_*_release: the next incarnation's generation,
 * the slot claimable again). A slot's incarnation has its own number, generation * slots + id,
 * which is what the trace's koids carry (id_proc_number): a reused slot is a new process in
 * the trace. Ended and freed slots stay in the probe chains (only never-used slots end a probe),
 * so no key behind them is lost.
 *
 * The drain thread names new entries in the trace: it walks the tables from where it stopped
 * (entries are published with a release store of `ready`). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler/exit/id_label.h"

#define ID_MAX_PROCS   1024u /* power of two */
#define ID_MAX_THREADS 8192u /* power of two */
#define ID_PROBES      64u   /* linear-probe bound: a full neighbourhood counts as "full" */
/* Generations a slot counts through before its incarnation numbers repeat: the numbers stay
 * below the koid ranges' tops (schema.h: 0x30000000 processes, 0xc0000000 threads, the last of
 * each the unattributed identity's). */
#define ID_PROC_GENERATIONS   (0x2fffffffu / ID_MAX_PROCS)
#define ID_THREAD_GENERATIONS (0xbffffffeu / ID_MAX_THREADS)

/* Key words that are no key: bits 63 and 62 both set (the stored keys never have both). */
#define ID_KEY_ENDED 0xc000000000000001ull /* ended, its old ids maybe still in use: skipped */
#define ID_KEY_FREE  0xc000000000000002ull /* given back: claimable, the probe goes on past it */

/* What the drain thread needs to discover modules of a new address space later. */
struct id_proc_info {
    uint64_t cr0, cr3, cr4, efer; /* cr3: the canonical root (kernel PGD of a PTI pair); 0: the
                                     process has no user address space (a kernel thread) */
    uint64_t first_ts;
};

struct id_proc {
    _Atomic uint64_t key; /* the key's word (id_table.c); 0: never used; ID_KEY_ENDED, _FREE */
    _Atomic uint32_t gen; /* this incarnation's generation (the drain thread's, set before FREE) */
    _Atomic int ready;    /* info published */
    struct id_proc_info info;
    struct id_label label; /* guest pid and name */
    /* Time of its last sample (relaxed: the drain thread ages identities the guest cannot list). */
    _Atomic uint64_t last_ts;
    /* Time of its last user-mode sample (relaxed: a hint for the drain thread, which looks at
     * a process's modules again while it keeps running user code). */
    _Atomic uint64_t last_user_ts;
    /* Time of its last user-mode sample whose PC lay outside every module the drain thread had
     * published unwind tables for (code its looks have not found yet: an executable whose code
     * ran only after the loader's long start, a library just loaded, JIT code). */
    _Atomic uint64_t unknown_code_ts;
    /* Its user stacks copied for a walk later, when its tables are compiled (stack_copy.h);
     * the drain thread sets it to the limit when such walks stop gaining anything. */
    _Atomic uint32_t copies;
};

struct id_thread {
    _Atomic uint64_t key; /* proc id << 52 | thread_key[51:0] (+1); 0, ID_KEY_ENDED, _FREE */
    _Atomic uint32_t gen;
    _Atomic int ready;
    _Atomic uint64_t last_ts; /* its last sample */
    _Atomic bool seen_user;   /* sampled at CPL 3 at least once: a user thread */
    /* The open RFC-0274 continuation of this thread (0 = none). Shared by every vCPU, so a
     * thread that migrates while in the kernel is completed wherever it returns to user mode;
     * whoever clears it (CAS) writes the one completion record. */
    _Atomic uint64_t cont;
    uint32_t proc;       /* id of its process */
    uint64_t thread_key; /* generic OS layer: the FS base; Linux: the guest tid */
    uint64_t first_ts;
    struct id_label label; /* guest tid and name */
    /* The OS layer's handle of the guest thread (guestos_task.handle), 0 if not known: what the
     * drain thread reads its namespace ids from when it names it. */
    _Atomic uint64_t handle;
    /* Its pid namespace ids as the exit path read them at its first sample (ID_NS_READ set in
     * ns_info once ns_ids holds them): ns_ids = ns_tid | ns_pid << 32, ns_info = the
     * namespace's inode number | its depth << 32. */
    _Atomic uint64_t ns_ids, ns_info;
};
#define ID_NS_READ (1ull << 63)

struct id_table {
    struct id_proc procs[ID_MAX_PROCS];
    struct id_thread threads[ID_MAX_THREADS];
    _Atomic uint64_t full; /* lookups that found no slot */
    /* A sample went to the unattributed identity (HVFXT_KOID_UNATTRIBUTED_*): the drain thread
     * names it once. */
    _Atomic bool unattributed;
};

void id_table_init(struct id_table *t);

/* Id of the process with this key (inserting it, with `info`, on first sight), 0 if the table
 * is full. */
uint32_t id_proc_get(struct id_table *t, uint64_t key, const struct id_proc_info *info);

/* Id of the thread (process `proc`, thread key), inserting it on first sight; 0 if full. */
uint32_t id_thread_get(struct id_table *t, uint32_t proc, uint64_t thread_key, uint64_t ts);

/* Drain thread: the id of a live identity with this key, 0 if none (nothing inserted). */
uint32_t id_proc_find(const struct id_table *t, uint64_t key);
uint32_t id_thread_find(const struct id_table *t, uint32_t proc, uint64_t thread_key);

/* Drain thread: end live identity `id` (its key matches no stop from now on); false if it was
 * not live. Its slot stays taken until id_*_release, after the exit core's grace. */
bool id_proc_end(struct id_table *t, uint32_t id);
bool id_thread_end(struct id_table *t, uint32_t id);
/* Drain thread, once no exit that began before the end is still running: the ended slot's state
 * cleared, its generation moved on, the slot claimable. */
void id_proc_release(struct id_table *t, uint32_t id);
void id_thread_release(struct id_table *t, uint32_t id);
/* Whether slot `id` holds a live identity (published or being published). */
bool id_proc_live(const struct id_table *t, uint32_t id);
bool id_thread_live(const struct id_table *t, uint32_t id);

/* The number of the incarnation slot `id` holds now (generation * slots + id), which its koid
 * carries (hvfxt_koid_guest_process); 0 for id 0. */
static inline uint32_t id_proc_number(const struct id_table *t, uint32_t id)
{
    if (!id || id > ID_MAX_PROCS)
        return 0;
    return atomic_load_explicit(&t->procs[id - 1].gen, memory_order_acquire) * ID_MAX_PROCS + id;
}
static inline uint32_t id_thread_number(const struct id_table *t, uint32_t id)
{
    if (!id || id > ID_MAX_THREADS)
        return 0;
    return atomic_load_explicit(&t->threads[id - 1].gen, memory_order_acquire) * ID_MAX_THREADS +
           id;
}

/* The slot whose current incarnation has number `n` (a koid's), 0 if none has it now. */
static inline uint32_t id_proc_of_number(const struct id_table *t, uint64_t n)
{
    if (!n || n >= (uint64_t)ID_PROC_GENERATIONS * ID_MAX_PROCS)
        return 0;
    uint32_t id = (uint32_t)((n - 1) % ID_MAX_PROCS) + 1;
    return id_proc_number(t, id) == n ? id : 0;
}

/* Process / thread `id` was sampled at `ts` (nothing for id 0). */
static inline void id_seen(struct id_table *t, uint32_t proc, uint32_t thread, uint64_t ts)
{
    if (proc && proc <= ID_MAX_PROCS)
        atomic_store_explicit(&t->procs[proc - 1].last_ts, ts, memory_order_relaxed);
    if (thread && thread <= ID_MAX_THREADS)
        atomic_store_explicit(&t->threads[thread - 1].last_ts, ts, memory_order_relaxed);
}

/* The labels of process / thread `id` (NULL for id 0 / out of range). */
struct id_label *id_proc_label(struct id_table *t, uint32_t id);
struct id_label *id_thread_label(struct id_table *t, uint32_t id);

/* Process `id` was sampled in user mode at `ts` (nothing for id 0). */
static inline void id_proc_seen_user(struct id_table *t, uint32_t id, uint64_t ts)
{
    if (id && id <= ID_MAX_PROCS)
        atomic_store_explicit(&t->procs[id - 1].last_user_ts, ts, memory_order_relaxed);
}

/* Process `id` ran user code at `ts` that no published module covers (nothing for id 0). */
static inline void id_proc_unknown_code(struct id_table *t, uint32_t id, uint64_t ts)
{
    if (id && id <= ID_MAX_PROCS)
        atomic_store_explicit(&t->procs[id - 1].unknown_code_ts, ts, memory_order_relaxed);
}

/* One more user stack of process `id` may be copied (fewer than `max` so far); false for id 0. */
static inline bool id_proc_take_copy(struct id_table *t, uint32_t id, uint32_t max)
{
    if (!id || id > ID_MAX_PROCS)
        return false;
    _Atomic uint32_t *c = &t->procs[id - 1].copies;
    if (atomic_load_explicit(c, memory_order_relaxed) >= max)
        return false;
    return atomic_fetch_add_explicit(c, 1, memory_order_relaxed) < max;
}

/* No more copies of process `id`'s stacks (they gain nothing: its code has no tables). */
static inline void id_proc_stop_copies(struct id_table *t, uint32_t id, uint32_t max)
{
    if (id && id <= ID_MAX_PROCS)
        atomic_store_explicit(&t->procs[id - 1].copies, max, memory_order_relaxed);
}

/* Mark thread `id` as seen in user mode / ask whether it was (false for id 0). A thread never
 * seen in user mode is treated as a kernel thread: its kernel samples open no continuation. */
void id_thread_mark_user(struct id_table *t, uint32_t id);
bool id_thread_is_user(const struct id_table *t, uint32_t id);

/* The thread's continuation slot (NULL for id 0 / out of range). */
_Atomic uint64_t *id_thread_cont(struct id_table *t, uint32_t id);
/* The thread's OS handle (NULL for id 0 / out of range). */
_Atomic uint64_t *id_thread_handle(struct id_table *t, uint32_t id);
/* Its namespace ids: set once by the exit path (id_thread_set_ns), read by the drain thread
 * (false: not read). */
void id_thread_set_ns(struct id_table *t, uint32_t id, int32_t ns_tid, int32_t ns_pid,
                      uint32_t pidns, uint32_t level);
bool id_thread_ns(const struct id_thread *th, int32_t *ns_tid, int32_t *ns_pid, uint32_t *pidns,
                  uint32_t *level);

/* Entry `id` if it is published, else NULL (for the drain thread). */
const struct id_proc *id_proc_at(const struct id_table *t, uint32_t id);
const struct id_thread *id_thread_at(const struct id_table *t, uint32_t id);
