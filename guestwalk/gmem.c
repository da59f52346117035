#include "guestwalk/gmem.h"

#include <string.h>

void gmem_init(struct gmem *m)
{
    memset(m, 0, sizeof(*m));
}

int gmem_add(struct gmem *m, uint64_t gpa, uint64_t size, void *host, struct hv_err *err)
{
    if (size == 0 || !host)
        return hv_errf(err, "guest memory slot at 0x%llx: empty or unmapped",
                       (unsigned long long)gpa);
    if (gpa + size < gpa)
        return hv_errf(err, "guest memory slot at 0x%llx: size wraps around",
                       (unsigned long long)gpa);
    if (m->nslots == GMEM_MAX_SLOTS)
        return hv_errk(err, HV_ERR_LIMIT, "too many guest memory slots (max %d)", GMEM_MAX_SLOTS);
    unsigned pos = 0;
    while (pos < m->nslots && m->slot[pos].gpa < gpa)
        pos++;
    if (pos > 0 && m->slot[pos - 1].gpa + m->slot[pos - 1].size > gpa)
        return hv_errf(err, "guest memory slot at 0x%llx overlaps the previous one",
                       (unsigned long long)gpa);
    if (pos < m->nslots && gpa + size > m->slot[pos].gpa)
        return hv_errf(err, "guest memory slot at 0x%llx overlaps the next one",
                       (unsigned long long)gpa);
    memmove(&m->slot[pos + 1], &m->slot[pos], (m->nslots - pos) * sizeof(m->slot[0]));
    m->slot[pos] = (struct gmem_slot){.gpa = gpa, .size = size, .host = host};
    m->nslots++;
    return 0;
}

bool gmem_read(const struct gmem *m, uint64_t gpa, void *dst, size_t len)
{
    uint8_t *out = dst;
    while (len > 0) {
        const struct gmem_slot *s = NULL;
        for (unsigned i = 0; i < m->nslots; i++) {
            if (gpa >= m->slot[i].gpa && gpa - m->slot[i].gpa < m->slot[i].size) {
                s = &m->slot[i];
                break;
            }
        }
        if (!s)
            return false;
        uint64_t off = gpa - s->gpa;
        size_t n = (size_t)(s->size - off) < len ? (size_t)(s->size - off) : len;
        memcpy(out, s->host + off, n);
        out += n;
        gpa += n;
        len -= n;
    }
    return true;
}

uint64_t gmem_ram_bytes(const struct gmem *m)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < m->nslots; i++)
        total += m->slot[i].size;
    return total;
}
