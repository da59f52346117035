/* Linux kernel symbols from /proc/kallsyms or System.map text ("ffffffff81000000 T _text"), and
 * the KASLR slide from the guest's MSR_LSTAR (the syscall entry point) against the map's
 * entry_SYSCALL_64, as vmi-rs does (docs/sources.md §3). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "symbolize/symtab.h"

#define KALLSYMS_MAX_BYTES (512ull << 20)

/* Parse text symbols (types t/T/w/W, and module symbols "[mod]") into `t` (which the caller has
 * initialised) and finish it. Lines that do not parse are skipped; a text without a single
 * symbol line is an error. Bounded by `len`. */
int kallsyms_parse(struct symtab *t, const char *text, size_t len, struct hv_err *err);

int kallsyms_load_file(struct symtab *t, const char *path, struct hv_err *err);

/* slide = lstar - address of entry_SYSCALL_64 in `t` (0 for a /proc/kallsyms of the same boot).
 * Fails if the table has no entry_SYSCALL_64 or lstar is not a canonical kernel address. */
int kallsyms_kaslr_slide(const struct symtab *t, uint64_t lstar, int64_t *slide,
                         struct hv_err *err);
