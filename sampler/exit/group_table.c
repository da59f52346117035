/* The group table (group_table.h): open addressing over a fixed array, linear probing from the
 * key's hash; an insert claims a free slot with a CAS on its key, then takes a number. */
#include "sampler/exit/group_table.h"

#define USED_EVERY_NS 100000000ull /* how stale a slot's last use may be: one store a 100 ms */

static uint32_t slot_of(uint64_t key)
{
    /* css_set addresses are 8-aligned slab objects: mix the bits above the alignment. */
    uint64_t h = (key >> 3) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40) & (GROUP_TABLE_SLOTS - 1);
}

static uint32_t use(struct group_slot *s, uint64_t now)
{
    uint64_t used = atomic_load_explicit(&s->used_ns, memory_order_relaxed);
    if (now > used + USED_EVERY_NS)
        atomic_store_explicit(&s->used_ns, now, memory_order_relaxed);
    return atomic_load_explicit(&s->number, memory_order_acquire);
}

uint32_t group_table_number(struct group_table *t, uint64_t key, uint64_t now)
{
    if (!key)
        return 0;
    uint32_t at = slot_of(key);
    for (uint32_t n = 0; n < GROUP_TABLE_PROBE; n++) {
        struct group_slot *s = &t->slot[(at + n) & (GROUP_TABLE_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key)
            return use(s, now);
        if (k != 0)
            continue;
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong_explicit(&s->key, &expected, key, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            atomic_store_explicit(&s->used_ns, now, memory_order_relaxed);
            uint32_t num = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed) + 1;
            atomic_store_explicit(&s->number, num, memory_order_release);
            return num;
        }
        if (expected == key) /* another thread inserted it just now */
            return use(s, now);
    }
    atomic_fetch_add_explicit(&t->full, 1, memory_order_relaxed);
    return 0;
}

uint32_t group_table_renumber(struct group_table *t, uint32_t i)
{
    uint32_t num = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed) + 1;
    atomic_store_explicit(&t->slot[i].number, num, memory_order_release);
    return num;
}

void group_table_free(struct group_table *t, uint32_t i)
{
    atomic_store_explicit(&t->slot[i].number, 0, memory_order_release);
    atomic_store_explicit(&t->slot[i].key, 0, memory_order_release);
}
