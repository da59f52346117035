/* Frameless functions: where the interrupted function's return address is, when it never linked
 * a frame. Code built with frame pointers still has frameless functions: GCC 12 at -O1/-O2 with
 * -fno-omit-frame-pointer gives leaf functions no frame (Debian's gcc does), and hand-written
 * or library code may omit it anywhere. A walk from RBP then skips the function's caller, whose
 * return address sits at [RSP + depth], depth being what the function pushed since its entry.
 *
 * The scan decodes forward from the PC (capstone, detail off: ids and bytes only) along the
 * function's own paths to its `ret`, tracking what each path pushes and pops; at the `ret`, what
 * it popped beyond what it pushed is the depth of the return address above the interrupted RSP:
 *
 *   push / pop / pushfq / popfq           +8 / -8
 *   sub rsp, imm / add rsp, imm           +imm / -imm
 *   lea rsp, [rsp + disp]                 -disp
 *   push rbp ... mov rbp, rsp ... leave   a frame linked and unlinked on the path (a shrink-wrapped
 *                                         prologue after an early exit): balanced
 *   pop rbp / leave not pushed on the path  FRAMED: the function has a linked frame, RBP is its own
 *   ret                                   FRAMELESS
 *   any other write to RSP, an indirect jump, iret, a budget exhausted: UNKNOWN
 *
 * Paths: the fall-through first; forward conditional branches are kept (at most
 * GW_FRAMELESS_MAX_PENDING) and taken when a path dead-ends (ud2, int3, hlt, a jump to a target
 * already jumped to, padding after a call, which marks a call that does not return); direct
 * unconditional jumps are followed (a tail call returns to our caller: the depth carries over).
 * Backward conditional branches are loop edges and are not taken.
 *
 * This is a heuristic: it is exact for compiler-generated code whose stack depth is the same on
 * every path to `ret` (what the ABI's unwind tables assume too), and a found return address is
 * accepted only if the bytes before it are a call instruction (gw_after_call). Exit path: no
 * allocation, bounded by GW_FRAMELESS_MAX_INSNS decoded instructions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestwalk/leaf.h"

#define GW_FRAMELESS_MAX_INSNS   48 /* instructions decoded per scan, all paths together */
#define GW_FRAMELESS_MAX_PENDING 8  /* forward conditional branches kept for later */
#define GW_FRAMELESS_MAX_JUMPS   16 /* distinct unconditional jump targets followed */
#define GW_FRAMELESS_MAX_DEPTH   (64u * 1024) /* a larger frame is not believed */

enum gw_frame_shape {
    GW_SHAPE_UNKNOWN = 0, /* no path could be followed to a return */
    GW_SHAPE_FRAMELESS,   /* returns with the return address at [RSP + depth] */
    GW_SHAPE_FRAMED,      /* unlinks a frame it did not link on the path: RBP is its own frame */
};

/* Up to `len` bytes of guest code at `va` into dst; returns how many could be read (0: none). */
typedef size_t (*gw_code_fetch_fn)(void *ctx, uint64_t va, uint8_t *dst, size_t len);

/* The shape of the function executing at `rip`; *depth is set for GW_SHAPE_FRAMELESS. */
enum gw_frame_shape gw_frameless_scan(struct gw_leaf_decoder *d, gw_code_fetch_fn fetch, void *ctx,
                                      uint64_t rip, uint32_t *depth);

/* Scans cost microseconds (capstone at every instruction), and samples land on the same hot
 * instructions again and again: each walker keeps the last answer per (address space, PC),
 * checked against the code bytes at the PC, so that changed code is scanned again. */
#define GW_SHAPE_CACHE 1024 /* entries, a power of two */

struct gw_shape_entry {
    uint64_t rip, root;
    uint8_t code[16]; /* the bytes at rip when scanned */
    uint32_t depth;
    uint8_t shape; /* enum gw_frame_shape */
    bool valid;
};

struct gw_shape_cache {
    struct gw_shape_entry e[GW_SHAPE_CACHE];
    uint64_t hits, scans;
};

/* The cached shape for (root, rip, code[0..16)), or false. */
bool gw_shape_cache_get(const struct gw_shape_cache *c, uint64_t root, uint64_t rip,
                        const uint8_t code[16], enum gw_frame_shape *shape, uint32_t *depth);
void gw_shape_cache_put(struct gw_shape_cache *c, uint64_t root, uint64_t rip,
                        const uint8_t code[16], enum gw_frame_shape shape, uint32_t depth);

/* Do the `n` bytes that end right before a candidate return address end with a call
 * instruction (call rel32, call r/m64 in its register and memory forms)? */
bool gw_after_call(const uint8_t *before, size_t n);
