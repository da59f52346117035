/* The Linux kernel's ORC unwind tables (docs/orc.md), read from a guest's memory.
 *
 * A kernel built with CONFIG_UNWINDER_ORC (every distribution kernel) carries, for each range of
 * its code, how to find the caller's stack pointer, return address and frame pointer: objtool
 * writes one `struct orc_entry` per IP into __start_orc_unwind[] and the IPs, each relative to
 * its own slot, into __start_orc_unwind_ip[] (arch/x86/include/asm/orc_types.h,
 * arch/x86/kernel/unwind_orc.c, scripts/sorttable.h).
 *
 * The packing of orc_entry's bit fields changed twice (6.3 added `signal`, 6.5 widened `type`
 * and dropped `end`); the layout is read from the guest's own BTF when it has one, else derived
 * from its release, and the decoded table must pass a plausibility check either way.
 *
 * The drain thread copies a table once into host memory (lx_orc_table_build: sorted IPs as
 * offsets from the lowest, decoded entries, a block index); the exit path only looks up
 * (lx_orc_find: a block index then at most log2(entries per 256 bytes of code) steps). The guest
 * cannot change a table after it was copied; a forged table gives wrong stacks, never unbounded
 * work. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/btf.h"

/* Base registers as hvprof numbers them: ORC_REG_* of orc_types.h from 4.14 to 6.12 at least,
 * plus AX. Debian's 7.2 numbers them otherwise (UNDEFINED 0, AX 1, DX 2, SP 3, BP 4, DI 5,
 * R10 6, R13 7, PREV_SP 8, SP_INDIRECT 9, BP_INDIRECT 10: its linux-headers' orc_types.h);
 * the decoder maps the guest's numbers through its layout's table (LX_ORC_REGS_*). */
enum lx_orc_reg {
    LX_ORC_REG_UNDEFINED = 0,
    LX_ORC_REG_PREV_SP = 1,
    LX_ORC_REG_DX = 2,
    LX_ORC_REG_DI = 3,
    LX_ORC_REG_BP = 4,
    LX_ORC_REG_SP = 5,
    LX_ORC_REG_R10 = 6,
    LX_ORC_REG_R13 = 7,
    LX_ORC_REG_BP_INDIRECT = 8,
    LX_ORC_REG_SP_INDIRECT = 9,
    LX_ORC_REG_AX = 10,
    LX_ORC_REG_INVALID = 15, /* a number the guest's numbering does not define */
};

/* The guest's register numbering: the one the bit layout alone cannot tell (BTF has no
 * #defines), chosen by which one the table decodes plausibly with (lx_orc_load). */
enum lx_orc_regs {
    LX_ORC_REGS_6 = 0, /* 4.14 - 6.12 */
    LX_ORC_REGS_7 = 1, /* Debian's 7.2 */
};

/* Entry types as hvprof numbers them: 6.5's ORC_TYPE_* values. Older kernels' UNWIND_HINT_TYPE
 * values (CALL 0, REGS 1, REGS_PARTIAL 2, with `end` and an undefined sp_reg for the first two)
 * are translated on decoding. */
enum lx_orc_type {
    LX_ORC_TYPE_UNDEFINED = 0,
    LX_ORC_TYPE_END_OF_STACK = 1,
    LX_ORC_TYPE_CALL = 2,
    LX_ORC_TYPE_REGS = 3,
    LX_ORC_TYPE_REGS_PARTIAL = 4,
};

#define LX_ORC_ENTRY_SIZE 6 /* struct orc_entry is __packed: s16, s16, 16 bits of fields */

struct lx_orc_entry {
    int16_t sp_offset, bp_offset;
    uint8_t sp_reg, bp_reg; /* enum lx_orc_reg */
    uint8_t type;           /* enum lx_orc_type */
    uint8_t signal;         /* 6.3+: the next frame's IP is exact (an interrupted PC) */
};

/* Where the guest's orc_entry keeps its bit fields: bit positions in the 16-bit word after the
 * two offsets; -1 where a field does not exist. */
struct lx_orc_layout {
    int8_t sp_reg, bp_reg, type, type_bits, end, signal;
    bool old_types;         /* UNWIND_HINT_TYPE numbering (before 6.5) */
    enum lx_orc_regs regs;  /* the register numbering */
    char how[96];           /* "BTF struct orc_entry: type 2 bits at 8, end at 10" */
};

/* From the guest's BTF `struct orc_entry`. False (why says so) if it has no such struct or its
 * fields are not a known arrangement. */
bool lx_orc_layout_from_btf(const struct lx_btf *b, struct lx_orc_layout *out, char *why,
                            size_t why_len);

/* From the release ("6.1.0-27-amd64"): <= 6.2, 6.3, >= 6.5; false for 6.4 and what cannot be
 * parsed. */
bool lx_orc_layout_from_release(const char *release, struct lx_orc_layout *out, char *why,
                                size_t why_len);

struct lx_orc_entry lx_orc_decode(const struct lx_orc_layout *l, const uint8_t raw[6]);

#define LX_ORC_MAX_ENTRIES (8u << 20)   /* vmlinux of 6.1 has ~400k; a module a few thousand */
#define LX_ORC_BLOCK_SHIFT 8            /* the kernel's LOOKUP_BLOCK_SIZE, orc_lookup.h */
#define LX_ORC_MAX_SPAN    (1ull << 30) /* KERNEL_IMAGE_SIZE: no table covers more */

struct lx_orc_table {
    uint64_t lo, hi; /* lowest IP, and one past the highest */
    uint32_t *ip;    /* offsets from lo, ascending */
    struct lx_orc_entry *e;
    size_t n;
    uint32_t *block; /* entries with IP below lo + b * 256, per block b (nblocks + 1) */
    size_t nblocks;
    /* For the plausibility check of a layout: entries without information (a kernel has a
     * terminator after each stretch of code, a minority), and with fields no kernel writes. */
    size_t undefined, bad;
};

/* Build a table from the guest's two arrays as copied: n s32 IPs each relative to its own
 * address (ip_va + 4 i), and n raw 6-byte entries. Entries whose IP lies outside [lo_ok, hi_ok)
 * are dropped. 0, or -1 with why (no entry left, a span over 1 GiB, out of memory). */
int lx_orc_table_build(struct lx_orc_table *t, const int32_t *ip_rel, uint64_t ip_va,
                       const uint8_t *raw, size_t n, const struct lx_orc_layout *l, uint64_t lo_ok,
                       uint64_t hi_ok, char *why, size_t why_len);
void lx_orc_table_free(struct lx_orc_table *t);

/* The entry that applies at ip (the last one at or below it), or NULL if ip is outside the
 * table. Exit path: no allocation. */
const struct lx_orc_entry *lx_orc_find(const struct lx_orc_table *t, uint64_t ip);
