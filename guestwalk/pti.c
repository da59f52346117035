#include "guestwalk/pti.h"

#include <string.h>

/* Entry bits that may differ between the two copies (SDM Vol. 3A §4.5, Table 4-15): Accessed
 * (5) and Dirty (6, ignored in non-leaf entries) are set by hardware per copy, XD (63) is set
 * by Linux in the kernel copy only. */
#define PTE_P        (1ull << 0)
#define PTE_MAY_DIFF ((1ull << 5) | (1ull << 6) | (1ull << 63))
#define USER_HALF    256u /* entries 0..255 of the top-level table map the lower half */

bool pti_is_user_root(const struct gmem *m, uint64_t root, uint64_t addr_mask)
{
    if (!(root & PTI_USER_BIT))
        return false;
    const uint8_t *user = gmem_ptr(m, root, USER_HALF * 8);
    const uint8_t *kernel = gmem_ptr(m, root - PTI_USER_BIT, USER_HALF * 8);
    if (!user || !kernel)
        return false;
    bool any_present = false;
    for (unsigned i = 0; i < USER_HALF; i++) {
        uint64_t u, k;
        memcpy(&u, user + 8 * i, 8);
        memcpy(&k, kernel + 8 * i, 8);
        if ((u ^ k) & ~PTE_MAY_DIFF)
            return false;
        if (u & PTE_P) {
            if ((u & addr_mask) == 0)
                return false; /* a present entry pointing at page 0: not a real table */
            any_present = true;
        }
    }
    return any_present;
}

void pti_cache_init(struct pti_cache *c)
{
    memset(c, 0, sizeof(*c));
}

static unsigned slot_of(uint64_t root)
{
    uint64_t h = (root >> 12) * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> 58) & (PTI_CACHE_ENTRIES - 1);
}

uint64_t pti_canonical_root(struct pti_cache *c, const struct gmem *m, uint64_t root,
                            uint64_t addr_mask)
{
    if (!(root & PTI_USER_BIT))
        return root; /* a kernel PGD, or a table of a guest without PTI */
    c->lookups++;
    unsigned s = slot_of(root);
    if (c->key[s] == root + 1 && (c->canon[s] != root || c->recheck[s]-- > 0))
        return c->canon[s];
    c->misses++;
    uint64_t canon = pti_is_user_root(m, root, addr_mask) ? root - PTI_USER_BIT : root;
    c->key[s] = root + 1;
    c->canon[s] = canon;
    c->recheck[s] = PTI_RECHECK;
    return canon;
}
