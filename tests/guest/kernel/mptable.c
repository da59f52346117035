/* CPUs from the MP table (Intel MultiProcessor Specification 1.4, chapter 4): the floating
 * pointer "_MP_" (16 bytes, checksum over 16) points at the configuration table "PCMP" whose
 * processor entries (type 0, 20 bytes) give each CPU's local APIC ID and flags. Bounded: every
 * read stays inside the low 1 MiB / the table's own length. */
#include "kernel.h"

static bool sum_ok(const u8 *p, u32 n)
{
    u8 s = 0;
    for (u32 i = 0; i < n; i++)
        s += p[i];
    return s == 0;
}

static u64 find_fp(u64 start, u64 len)
{
    for (u64 a = start; a + 16 <= start + len; a += 16) {
        const u8 *p = phys_to_virt(a);
        if (!memcmp(p, "_MP_", 4) && p[8] == 1 && sum_ok(p, 16))
            return a;
    }
    return 0;
}

int mptable_cpus(const struct hvprof_bootinfo *bi, u32 *apic_ids, int max)
{
    u64 fp = 0;
    if (bi->mptable_gpa && bi->mptable_gpa < 0x100000 - 16) {
        const u8 *p = phys_to_virt(bi->mptable_gpa);
        if (!memcmp(p, "_MP_", 4) && sum_ok(p, 16))
            fp = bi->mptable_gpa;
    }
    if (!fp) /* MP spec 4: last KiB of base memory, then the BIOS ROM area */
        fp = find_fp(0x9fc00, 0x400);
    if (!fp)
        fp = find_fp(0xf0000, 0x10000);
    if (!fp)
        return 0;
    const u8 *f = phys_to_virt(fp);
    u32 cfg = *(const u32 *)(f + 4);
    if (!cfg || cfg >= 0x100000 - 44)
        return 0;
    const u8 *t = phys_to_virt(cfg);
    u16 len = *(const u16 *)(t + 4);
    u16 count = *(const u16 *)(t + 34);
    if (memcmp(t, "PCMP", 4) || len < 44 || cfg + len > 0x100000 || !sum_ok(t, len))
        return 0;
    int n = 0;
    u32 off = 44;
    for (u16 i = 0; i < count && off < len; i++) {
        u8 type = t[off];
        u32 size = type == 0 ? 20 : 8;
        if (off + size > len)
            break;
        if (type == 0 && (t[off + 3] & 1) && n < max) { /* enabled */
            u32 id = t[off + 1];
            if (t[off + 3] & 2) { /* the BSP goes first */
                for (int k = n; k > 0; k--)
                    apic_ids[k] = apic_ids[k - 1];
                apic_ids[0] = id;
            } else {
                apic_ids[n] = id;
            }
            n++;
        }
        off += size;
    }
    return n;
}
