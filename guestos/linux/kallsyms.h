/* The kernel's own symbol table, decoded from guest memory: the compressed kallsyms tables that
 * VMCOREINFO locates since Linux 6.0, or that kallsyms_find.h finds by their structure before
 * (kernel/kallsyms.c, scripts/kallsyms.c; the layout is in docs/linux-introspection.md).
 *
 *   kallsyms_num_syms      u32 n
 *   kallsyms_names         per symbol: a length L (1 byte, or from 6.1 two bytes ULEB128 when
 *                          L > 0x7f), then L token indices
 *   kallsyms_token_table   256 NUL-terminated strings; kallsyms_token_index: u16[256] offsets
 *   kallsyms_offsets       s32[n] with kallsyms_relative_base (u64), or alone (place-relative,
 *                          Debian's 7.x: VMCOREINFO names no base), or kallsyms_addresses u64[n]
 *
 * A name expands to its tokens' strings; its first character is the nm type letter. How an
 * address is computed depends on the kernel's configuration and version (absolute, base-
 * relative, base-relative with absolute per-CPU symbols, place-relative), so the decoder tries
 * each and keeps the one that maps `_stext` to VMCOREINFO's SYMBOL(_stext), as drgn does.
 *
 * The tables belong to a possibly hostile guest: every read is bounded by the kernel image and
 * guest RAM, names by LX_KSYM_NAME_MAX, the count by LX_KALLSYMS_MAX_SYMS, what the names expand
 * to in all by LX_KALLSYMS_MAX_NAME_BYTES (checked before any symbol is passed on), and a token
 * with a byte that no symbol name can hold makes the whole table invalid. A forged table gives
 * wrong names, never a crash or unbounded memory. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestos/linux/kallsyms_find.h"
#include "guestos/linux/kimage.h"

#define LX_KALLSYMS_MAX_SYMS (1u << 20) /* a distribution kernel has ~200k */
#define LX_KSYM_NAME_MAX     512        /* KSYM_NAME_LEN since 6.1 */
/* Bytes the names may expand to in all: Debian 6.1's ~190k names expand to ~5 MiB. The tokens
 * let ~25 MiB of forged tables expand to 2 GiB of names (1 MiB symbols of 512 bytes each), which
 * the recording and the host's memory would then hold (docs/reliability.md, "Budgets"). */
#define LX_KALLSYMS_MAX_NAME_BYTES (32u << 20)

enum lx_kallsyms_mode {
    LX_KALLSYMS_ABSOLUTE,        /* kallsyms_addresses[i] */
    LX_KALLSYMS_RELATIVE,        /* relative_base + (u32)offsets[i] */
    LX_KALLSYMS_ABSOLUTE_PERCPU, /* offsets[i] >= 0: itself; else relative_base - 1 - offsets[i] */
    LX_KALLSYMS_PLACE_RELATIVE,  /* &offsets[i] + offsets[i] */
};

struct lx_kallsyms_info {
    uint32_t nsyms;
    enum lx_kallsyms_mode mode;
    uint64_t stext; /* SYMBOL(_stext), which the chosen mode reproduces */
};

/* Called for each symbol in table order (sorted by address): its run-time address, nm type
 * letter, and name (NUL-terminated, printable ASCII, at most LX_KSYM_NAME_MAX bytes). Return 0
 * to go on, -1 to stop the decode with that error. */
typedef int (*lx_ksym_fn)(void *ctx, uint64_t addr, char type, const char *name, size_t len,
                          struct hv_err *err);

/* Decode the tables at `loc` (named by VMCOREINFO or found by lx_kallsyms_find()), reading the
 * image through `k`; `stext` is VMCOREINFO's SYMBOL(_stext). Returns 0 (every symbol passed to
 * fn, *info filled), or -1 with err: tables not located or that do not decode, or no address
 * mode that maps _stext right. */
int lx_kallsyms_decode(const struct lx_kimage *k, const struct lx_kallsyms_loc *loc,
                       uint64_t stext, lx_ksym_fn fn, void *ctx, struct lx_kallsyms_info *info,
                       struct hv_err *err);

const char *lx_kallsyms_mode_name(enum lx_kallsyms_mode m);
