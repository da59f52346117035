/* DWARF call-frame information (.eh_frame) compiled into a compact table, once per binary, off
 * the exit path; the CFI unwinder (guestwalk/cfi_unwind.h) looks rows up on the exit path.
 *
 * Most of a distribution's user space is built without frame pointers, but every x86-64 ELF
 * image carries `.eh_frame` (the psABI requires it, §6.2 "Unwind Library Interface") and, in a
 * PT_GNU_EH_FRAME segment, `.eh_frame_hdr`: a table of (initial location, FDE address) sorted by
 * location. Both lie in a PT_LOAD segment, so they are in the guest process's memory. Formats:
 * DWARF 5 §6.4 (call frame information; CIE/FDE, the CFA instructions), the Linux Standard Base
 * Core §10.6 (.eh_frame: the 'z', 'R', 'P', 'L', 'S' augmentations, DW_EH_PE pointer encodings)
 * and §10.6.2 (.eh_frame_hdr). docs/cfi.md says what is taken from where.
 *
 * Compilation executes each FDE's CFA program (after its CIE's initial instructions) and keeps
 * only what an x86-64 walk with RSP, RBP and the PC needs: at each address where the rules
 * change, how to find the CFA (RSP + n, RBP + n, or an expression), and where the caller's RBP
 * and the return address are (at CFA + n, the same register, undefined, or an expression). An
 * address range without an FDE gets a row that says so (the walker falls back to frame pointers
 * there).
 *
 * Everything read is untrusted (a guest's memory, or a file): every length, offset, pointer
 * encoding and instruction is bounded; a malformed FDE is skipped and counted, never followed
 * out of the buffer, and compilation does work linear in the input. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* DWARF register numbers of x86-64 (psABI §3.6.2, Figure 3.36). */
enum { CFI_DW_RBP = 6, CFI_DW_RSP = 7, CFI_DW_RA = 16 };

enum cfi_cfa {
    CFI_CFA_NONE = 0,  /* no FDE covers this address */
    CFI_CFA_RSP,       /* CFA = RSP + cfa_off */
    CFI_CFA_RBP,       /* CFA = RBP + cfa_off */
    CFI_CFA_EXPR,      /* CFA = value of expression cfa_off (DW_CFA_def_cfa_expression) */
    CFI_CFA_OTHER_REG, /* CFA from a register the walk does not track (e.g. R10 in a
                        * function that realigns its stack): the walk stops there */
};

enum cfi_rule {
    CFI_RULE_SAME = 0, /* the caller's value is this frame's (same value, or no rule) */
    CFI_RULE_UNDEF,    /* undefined: for the return address, the outermost frame */
    CFI_RULE_AT,       /* saved at CFA + off */
    CFI_RULE_VAL,      /* the value CFA + off */
    CFI_RULE_AT_EXPR,  /* saved at the address expression `off` computes (CFA pushed first) */
    CFI_RULE_VAL_EXPR, /* the value expression `off` computes */
    CFI_RULE_OTHER,    /* in another register (DW_CFA_register): not tracked */
};

#define CFI_ROW_SIGNAL                                                                             \
    1u /* the FDE's CIE has augmentation 'S': a signal frame, whose return                         \
        * address is the interrupted PC itself, not after a call */

/* One change of rules, valid from `pc` up to the next row's. 16 bytes. */
struct cfi_row {
    uint32_t pc;     /* offset from cfi_table.base */
    uint8_t cfa;     /* enum cfi_cfa */
    uint8_t rbp;     /* enum cfi_rule of the caller's RBP */
    uint8_t ra;      /* enum cfi_rule of the return address */
    uint8_t flags;   /* CFI_ROW_* */
    int32_t cfa_off; /* RSP/RBP offset, or the expression's index for CFI_CFA_EXPR */
    int16_t rbp_off; /* CFA offset, or the expression's index for the *_EXPR rules */
    int16_t ra_off;
};

/* A DWARF expression kept from the table (its bytes in cfi_table.expr_bytes). */
struct cfi_expr {
    uint32_t off;
    uint16_t len;
};

#define CFI_MAX_EXPR_LEN 64             /* bytes of one expression kept (glibc's longest is 13) */
#define CFI_MAX_EXPRS    4096           /* distinct expressions of a table */
#define CFI_MAX_ROWS     (8u << 20)     /* rows of one table (a 100 MB binary has ~1.5 M) */
#define CFI_MAX_STATE    16             /* DW_CFA_remember_state nesting */
#define CFI_MAX_INPUT    (256ull << 20) /* bytes of .eh_frame_hdr + .eh_frame considered */

struct cfi_stats {
    uint64_t fdes;        /* FDEs compiled */
    uint64_t fdes_absent; /* FDEs (or parts of the table) on pages not present */
    uint64_t fdes_bad;    /* malformed FDEs or CIEs, skipped */
    uint64_t unsupported; /* rows whose CFA is in a register the walk does not track */
    uint64_t exprs;       /* rows with an expression rule */
};

/* A compiled table: rows sorted by pc, distinct pcs. Immutable once built; shared by every
 * address space that maps the binary (addresses are link-time: add the load bias). */
struct cfi_table {
    uint64_t base; /* link-time address the rows' pc are relative to */
    struct cfi_row *rows;
    size_t nrows;
    struct cfi_expr *exprs;
    size_t nexprs;
    uint8_t *expr_bytes;
    size_t expr_len;
    struct cfi_stats stats;
};

/* The bytes a table is compiled from: a copy of part of the binary's memory image, at link-time
 * addresses [vaddr, vaddr + len), in which some 4 KiB pages (of the run-time image) may be
 * missing. `present` has one byte per page of [vaddr & ~0xfff, ...): nonzero = present; NULL =
 * all present. */
struct cfi_src {
    uint64_t image_base; /* the image's lowest link-time address: the rows' base */
    uint64_t vaddr;
    const uint8_t *data;
    size_t len;
    const uint8_t *present;
};

/* Compile the table of the image whose .eh_frame_hdr is at link-time address `hdr` (in src).
 * Without a usable .eh_frame_hdr search table (hdr 0, another table encoding), `eh_frame` (the
 * link-time address of .eh_frame, 0 if unknown) is scanned entry by entry instead. Returns 0
 * (possibly with an empty table when nothing could be read; t->stats says why), or -1 with err
 * (no memory, or neither section readable at all). */
int cfi_compile(const struct cfi_src *src, uint64_t hdr, uint64_t eh_frame, struct cfi_table *t,
                struct hv_err *err);
void cfi_table_free(struct cfi_table *t);

/* The row covering link-time address `pc`, or NULL (below the first row, or a CFI_CFA_NONE row:
 * no FDE). O(log rows). */
const struct cfi_row *cfi_find(const struct cfi_table *t, uint64_t pc);

/* Host memory the table holds, for the summary. */
size_t cfi_table_bytes(const struct cfi_table *t);
