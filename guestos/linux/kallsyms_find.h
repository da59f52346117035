/* Where the kallsyms tables are: named by VMCOREINFO (Linux 6.0+), or found by their own
 * structure in the kernel image when VMCOREINFO does not name them (5.x: Debian 11's 5.10,
 * Ubuntu 22.04's 5.15, RHEL 9's 5.14). docs/linux-introspection.md, "kallsyms without VMCOREINFO".
 *
 * The structure (scripts/kallsyms.c, 5.x and 6.x; each table starts at an 8-byte boundary):
 *
 *   kallsyms_offsets  s32[n]  (or kallsyms_addresses u64[n])
 *   kallsyms_relative_base u64
 *   kallsyms_num_syms u32 n
 *   kallsyms_names    n names: a length, then that many token indices
 *   kallsyms_markers  u32[ceil(n/256)]: where name 256*i starts in kallsyms_names
 *   (6.2+, and in Debian's 6.1: kallsyms_seqs_of_names, 3 bytes x n)
 *   kallsyms_token_table  256 NUL-terminated strings; kallsyms_token_index u16[256]
 *   (Debian's 6.12: kallsyms_offsets and kallsyms_relative_base here instead)
 *
 * Every single character that occurs in a symbol name is its own token, at its own byte value,
 * so the token table holds "0\0" "1\0" ... "9\0" back to back at indices 0x30-0x39. From such a
 * run the finder walks back to the table's start, and accepts it only if the u16 array after it
 * indexes each of its 256 strings. It then looks back from the table for the markers (0 first,
 * then steps a block of 256 names can take), and before them for a u32 n followed by n names
 * that end where the markers start and put name 256*i where marker i says. Any one of these
 * checks rejects forged or stray bytes; together they leave no doubt.
 *
 * Every read is bounded by the image and guest RAM; the scan reads at most the range it is
 * given, checks at most 4096 digit runs and examines at most 256 MiB for them (a guest can plant
 * decoys: then the search gives up with a message). The tables belong to the guest: the decoder
 * re-checks everything it reads. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "guestos/linux/kimage.h"
#include "guestos/linux/vmcoreinfo.h"

/* Run-time addresses of the tables (0: not there). relative_base is the address of the u64
 * kallsyms_relative_base, not its value. */
struct lx_kallsyms_loc {
    uint64_t num_syms, names, markers, token_table, token_index;
    uint64_t offsets, relative_base, addresses;
    bool by_structure; /* found by lx_kallsyms_find(), not named by VMCOREINFO */
};

/* The tables VMCOREINFO names (6.0+). False when it names none of them. */
bool lx_kallsyms_loc_from_vmcoreinfo(const struct lx_vmcoreinfo *v, struct lx_kallsyms_loc *loc);

/* How far from _stext the search goes: a distribution kernel's code and read-only data take
 * 20-40 MiB. */
#define LX_KALLSYMS_SCAN_MAX (256ull << 20)

/* How far back from the token table the markers may lie: past seqs_of_names (3 bytes a symbol,
 * LX_KALLSYMS_MAX_SYMS of them) and some slack. */
#define LX_KALLSYMS_MARKERS_WINDOW (4ull << 20)

/* Find the tables in the image's virtual range [from, to). 0 with *loc filled (offsets,
 * relative_base and addresses are where each would be; the decoder's _stext check picks the
 * address mode), or -1 with err: no token table in the range, or none whose names and markers
 * agree. */
int lx_kallsyms_find(const struct lx_kimage *k, uint64_t from, uint64_t to,
                     struct lx_kallsyms_loc *loc, struct hv_err *err);
