/* DWARF expressions of call-frame information, evaluated on the exit path (DWARF 5 §2.5, the
 * operations a CFA or register rule may use, §6.4.2.2-3). Compilers and glibc use a few: the
 * PLT's CFA (rsp + 8 + 8 if the PC is past the PLT entry's push), signal frames' CFA and saved
 * registers in the kernel's sigcontext (`rsp + n`, deref). Any operation outside the set below,
 * a register the walk does not know, or more than CFI_EXPR_MAX_OPS operations stops the
 * evaluation: the walk then ends with a reason, never guesses. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CFI_EXPR_MAX_OPS   64 /* operations executed (branches included) */
#define CFI_EXPR_MAX_STACK 16

/* The registers a frame's expressions may read (DWARF numbers 6, 7, 16). */
struct cfi_expr_regs {
    uint64_t rsp, rbp, rip;
    bool rbp_known;
};

/* Read 1..8 bytes of guest memory at va into *v (zero-extended); false if not readable. */
typedef bool (*cfi_expr_read_fn)(void *ctx, uint64_t va, unsigned size, uint64_t *v);

/* Evaluate `len` bytes of expression; `initial` is pushed first when `push` (register rules:
 * the CFA). *out is the top of the stack at the end. false: not evaluable. */
bool cfi_expr_eval(const uint8_t *p, size_t len, const struct cfi_expr_regs *regs, bool push,
                   uint64_t initial, cfi_expr_read_fn read, void *ctx, uint64_t *out);
