/* libFuzzer: DWARF call-frame information from a hostile binary or guest (guestwalk/cfi.h):
 * .eh_frame_hdr and .eh_frame compiled into a table, rows looked up, expressions evaluated, and
 * a CFI walk of a stack made of the same bytes. Nothing may crash, loop, or read outside the
 * input; the table must be sorted and the walk bounded.
 *
 * Input: struct cfi_fuzz_head | section bytes (at link-time address CFI_FUZZ_VADDR; the same bytes
 * are mapped as the stack at CFI_FUZZ_STACK). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestwalk/cfi_expr.h"
#include "guestwalk/cfi_unwind.h"
#include "guestwalk/tests/guest_image.h"

#define CFI_FUZZ_VADDR 0x10000ull
#define CFI_FUZZ_STACK 0x7ff000000ull
#define CFI_FUZZ_MAX   (256u << 10)

struct cfi_fuzz_head {
    uint32_t hdr_off, eh_frame_off; /* offsets into the bytes; ~0: not given */
    uint64_t rip, rsp, rbp;
    uint8_t absent; /* bit i: page i of the bytes not present */
    uint8_t pad[7];
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool read_input(void *ctx, uint64_t va, unsigned size, uint64_t *v)
{
    (void)ctx;
    uint64_t x = va * 0x9e3779b97f4a7c15ull;
    *v = size >= 8 ? x : x & ((1ull << (8 * size)) - 1);
    return (va & 1) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cfi_fuzz_head h;
    if (size < sizeof(h) || size - sizeof(h) > CFI_FUZZ_MAX)
        return 0;
    memcpy(&h, data, sizeof(h));
    const uint8_t *bytes = data + sizeof(h);
    size_t len = size - sizeof(h);
    uint8_t present[(CFI_FUZZ_MAX >> 12) + 1];
    for (size_t i = 0; i < sizeof(present); i++)
        present[i] = i < 8 ? !((h.absent >> i) & 1) : 1;
    struct cfi_src src = {
        .image_base = 0, .vaddr = CFI_FUZZ_VADDR, .data = bytes, .len = len, .present = present};
    uint64_t hdr = h.hdr_off < len ? CFI_FUZZ_VADDR + h.hdr_off : 0;
    uint64_t ef = h.eh_frame_off < len ? CFI_FUZZ_VADDR + h.eh_frame_off : 0;
    struct cfi_table t;
    if (cfi_compile(&src, hdr, ef, &t, NULL) != 0)
        return 0;
    for (size_t i = 1; i < t.nrows; i++)
        if (t.rows[i].pc <= t.rows[i - 1].pc)
            __builtin_trap();
    for (size_t i = 0; i < t.nexprs; i++) {
        if (t.exprs[i].off + t.exprs[i].len > t.expr_len)
            __builtin_trap();
        struct cfi_expr_regs regs = {h.rsp, h.rbp, h.rip, true};
        uint64_t v;
        (void)cfi_expr_eval(t.expr_bytes + t.exprs[i].off, t.exprs[i].len, &regs, i & 1, h.rsp,
                            read_input, NULL, &v);
    }
    /* Raw bytes as an expression too. */
    struct cfi_expr_regs regs = {h.rsp, h.rbp, h.rip, (h.absent & 0x80) != 0};
    uint64_t v;
    (void)cfi_expr_eval(bytes, len < 128 ? len : 128, &regs, true, h.rbp, read_input, NULL, &v);
    for (uint64_t pc = 0; pc < 0x100; pc += 7)
        (void)cfi_find(&t, h.rip + pc);

    /* A walk: the bytes as the stack, the table over [0, 4 GiB). */
    static struct gimg g;
    static struct gw_walker w;
    static bool ready;
    if (!ready) {
        if (gimg_init(&g, false) != 0 ||
            gimg_map_fresh(&g, CFI_FUZZ_STACK, CFI_FUZZ_MAX, GIMG_USER_RW | GIMG_XD) != 0 ||
            gw_walker_init(&w, &g.mem, NULL, NULL) != 0)
            abort();
        ready = true;
    }
    gimg_write(&g, CFI_FUZZ_STACK, bytes, len);
    struct gw_cfi_map *map = malloc(sizeof(*map) + sizeof(map->m[0]));
    if (!map)
        abort();
    map->n = 1;
    map->m[0] = (struct gw_cfi_module){0, 1ull << 32, 0, &t};
    struct gw_snapshot snap = gimg_cpu(&g, h.rip, CFI_FUZZ_STACK + (h.rsp % len), h.rbp, 3);
    gw_walker_begin(&w, &snap);
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
    struct gw_regs r = gw_regs_of(&snap);
    gw_cfi_unwind(map, &w, &r, &st);
    if (st.count > GW_DEFAULT_MAX_DEPTH || st.stop == GW_STOP_NONE || st.pc[0] != h.rip)
        __builtin_trap();
    gimg_write(&g, CFI_FUZZ_STACK, (uint8_t[256]){0}, len < 256 ? len : 256);
    free(map);
    cfi_table_free(&t);
    return 0;
}
