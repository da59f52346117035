#include "sampler/exit/id_label.h"

#include <string.h>

static void comm_words(const char comm[GUESTOS_COMM_LEN], uint64_t w[GUESTOS_COMM_LEN / 8])
{
    memcpy(w, comm, GUESTOS_COMM_LEN);
}

void id_label_set(struct id_label *l, int32_t guest_id, bool kthread,
                  const char comm[GUESTOS_COMM_LEN])
{
    uint64_t w[GUESTOS_COMM_LEN / 8];
    comm_words(comm, w);
    uint32_t seq = atomic_load_explicit(&l->seq, memory_order_acquire);
    if (seq & 1)
        return; /* another vCPU is writing it */
    bool same = seq != 0 && atomic_load_explicit(&l->guest_id, memory_order_relaxed) == guest_id &&
                atomic_load_explicit(&l->kthread, memory_order_relaxed) == kthread;
    for (unsigned i = 0; same && i < GUESTOS_COMM_LEN / 8; i++)
        same = atomic_load_explicit(&l->comm[i], memory_order_relaxed) == w[i];
    if (same)
        return;
    if (!atomic_compare_exchange_strong_explicit(&l->seq, &seq, seq + 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return;
    /* Odd from here: readers retry. The release fence orders the odd seq before the stores. */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&l->guest_id, guest_id, memory_order_relaxed);
    atomic_store_explicit(&l->kthread, kthread, memory_order_relaxed);
    for (unsigned i = 0; i < GUESTOS_COMM_LEN / 8; i++)
        atomic_store_explicit(&l->comm[i], w[i], memory_order_relaxed);
    atomic_store_explicit(&l->seq, seq + 2, memory_order_release);
}

bool id_label_get(const struct id_label *l, struct id_label_value *out)
{
    for (unsigned attempt = 0; attempt < 1000; attempt++) {
        uint32_t s0 = atomic_load_explicit(&l->seq, memory_order_acquire);
        if (s0 == 0)
            return false;
        if (s0 & 1)
            continue;
        uint64_t w[GUESTOS_COMM_LEN / 8];
        out->guest_id = atomic_load_explicit(&l->guest_id, memory_order_relaxed);
        out->kthread = atomic_load_explicit(&l->kthread, memory_order_relaxed);
        for (unsigned i = 0; i < GUESTOS_COMM_LEN / 8; i++)
            w[i] = atomic_load_explicit(&l->comm[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&l->seq, memory_order_relaxed) != s0)
            continue;
        out->seq = s0;
        memcpy(out->comm, w, GUESTOS_COMM_LEN);
        out->comm[GUESTOS_COMM_LEN] = 0;
        return true;
    }
    return false;
}
