/* Source lines of code addresses, from a binary's DWARF debugging information (.debug_info and
 * .debug_line, DWARF 2-5) read through elfutils' libdw. For an address: the source file and line
 * in the function that contains it, with inlined calls resolved to their call site in that
 * function (the outermost frame `addr2line -i` prints), and where that function is declared.
 * pprof's `-list` reads these (report/report_pprof.c, docs/report.md). The file is local and
 * given by the user (--symbols, --vmlinux); libdw bounds its own parsing. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct dwarf_lines;

/* A function inlined at the address (DW_TAG_inlined_subroutine): its name (the linkage name
 * where DWARF gives one, else DW_AT_name; of its abstract origin), the line the address is on
 * in it, and where it is declared. Strings owned by the dwarf_lines. */
#define SRC_INLINE_MAX 8 /* deeper chains keep their outermost frames */
struct src_inline {
    const char *name;
    const char *file;
    uint32_t line;
    const char *decl_file;
    uint32_t decl_line;
};

struct src_line {
    const char *file;      /* source file of `line` (owned by the dwarf_lines) */
    uint32_t line;         /* 1-based; the call site when the address is in inlined code */
    const char *func_file; /* where the containing function is declared; NULL if unknown */
    uint32_t func_line;    /* its declaration line, 0 if unknown */
    /* The inlined calls the address is in, innermost first (`addr2line -i`'s order, before
     * the function itself); each one's line is in it, the next one's call site is in the next
     * out, the last one's in the function (`line`). */
    struct src_inline inl[SRC_INLINE_MAX];
    uint8_t ninl;
};

/* Open `path`. Returns 0 with *out set, 0 with *out NULL when the file has no DWARF line
 * information (a stripped binary), -1 with `err` when it cannot be read at all. */
int dwarf_lines_open(struct dwarf_lines **out, const char *path, struct hv_err *err);

/* The source line of link-time address `addr`; false if the DWARF does not cover it. */
bool dwarf_lines_lookup(struct dwarf_lines *d, uint64_t addr, struct src_line *out);

void dwarf_lines_close(struct dwarf_lines *d);
