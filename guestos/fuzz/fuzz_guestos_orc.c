/* libFuzzer: the ORC decoder and unwinder on a hostile guest's tables and stacks. The input is
 *
 *   u16 n | u8 layout (0: <= 6.2, 1: 6.3, 2: 6.5+) | u8 flags | u64 rip | u64 rsp | u64 rbp |
 *   n x s32 IP (relative to its slot at IP_VA + 4 i) | n x 6-byte orc_entry | stack bytes
 *
 * The stack bytes fill a 16 KiB task stack and an 8 KiB IRQ stack mapped at fixed kernel
 * addresses (the page tables are the harness's: the guest controls every byte the walk reads,
 * not where it lies). Unless flags bit 0 is set, rsp and rbp are offsets into the task stack.
 * The table is built with the layout given, then walked; the walk must end with a stop reason,
 * at most the capacity of frames, and with user registers only at a user entry. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/linux/orc.h"
#include "guestos/linux/orc_unwind.h"
#include "guestwalk/tests/guest_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define IP_VA  0xffffffff81000000ull
#define TASK_S 0xffffc90000010000ull
#define IRQ_S  0xffffc90000100000ull
#define HDR    28

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gimg g;
    static struct gw_walker w;
    static bool ready;
    if (!ready) {
        if (gimg_init(&g, false) < 0 || gimg_map_fresh(&g, TASK_S, 16384, GIMG_KERN_RW) < 0 ||
            gimg_map_fresh(&g, IRQ_S, 8192, GIMG_KERN_RW) < 0 ||
            gw_walker_init(&w, &g.mem, NULL, NULL) < 0)
            abort();
        ready = true;
    }
    if (size < HDR)
        return 0;
    size_t n = (size_t)(data[0] | data[1] << 8) % 1024;
    if (size < HDR + n * 10)
        return 0;
    struct lx_orc_layout l;
    char why[96];
    const char *rel[] = {"6.1", "6.3", "6.6"};
    if (!lx_orc_layout_from_release(rel[data[2] % 3], &l, why, sizeof(why)))
        abort();
    uint64_t rip = rd64(data + 4), rsp = rd64(data + 12), rbp = rd64(data + 20);
    if (!(data[3] & 1)) {
        rsp = TASK_S + (rsp & 0x3fff);
        rbp = TASK_S + (rbp & 0x3fff);
    }
    int32_t *ips = n ? malloc(n * 4) : NULL;
    if (n && !ips)
        return 0;
    if (n)
        memcpy(ips, data + HDR, n * 4);
    const uint8_t *raw = data + HDR + n * 4;
    const uint8_t *stack = raw + n * 6;
    size_t left = size - HDR - n * 10;
    static uint8_t zero[16384 + 8192];
    uint8_t *st = zero; /* task stack then IRQ stack, from the input, zero-filled */
    memset(st, 0, sizeof(zero));
    memcpy(st, stack, left < sizeof(zero) ? left : sizeof(zero));
    if (gimg_write(&g, TASK_S, st, 16384) < 0 || gimg_write(&g, IRQ_S, st + 16384, 8192) < 0)
        abort();

    struct lx_orc o = {.layout = l};
    if (lx_orc_table_build(&o.vmlinux, ips, IP_VA, raw, n, &l, IP_VA - (1ull << 20),
                           IP_VA + (1ull << 20), why, sizeof(why)) == 0) {
        for (size_t i = 0; i < o.vmlinux.n; i++)
            if (i && o.vmlinux.ip[i] < o.vmlinux.ip[i - 1])
                abort(); /* sorted, whatever the input's order */
        uint64_t pc[32];
        struct gw_stack s = GW_STACK_INIT(pc, 32);
        struct gw_snapshot snap = gimg_cpu(&g, rip, rsp, rbp, 0);
        gw_walker_begin(&w, &snap);
        struct gw_regs r = {.rip = rip, .rsp = rsp, .rbp = rbp};
        unsigned got = lx_orc_unwind(&o, &w, &r, &s);
        if (got != s.count || got > 32 || s.stop == GW_STOP_NONE || (got && pc[0] != rip))
            abort();
        if (s.user_entry && (s.stop != GW_STOP_CHAIN_END || !s.user_regs.user))
            abort();
        lx_orc_table_free(&o.vmlinux);
    }
    free(ips);
    return 0;
}
