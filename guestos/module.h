/* Module discovery from guest memory, at record time: for each executable user range of an
 * address space (from the guest's page tables), find the ELF header at or a few pages below the
 * range start, read the program headers and the GNU build-id note from guest memory, and compute
 * the load bias. All guest data is untrusted: every count, size and offset is bounded, and reads
 * go through a callback that fails for unmapped memory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Copy `len` bytes of guest-virtual memory at `va` of the address space being examined.
 * Returns false if any byte is not mapped (nothing is then assumed about dst). */
typedef bool (*discover_read_fn)(void *ctx, uint64_t va, void *dst, size_t len);

#define DISCOVER_MAX_SEGS  16 /* PT_LOAD segments kept per module */
#define DISCOVER_MAX_PHDRS 64 /* program headers examined */
/* Pages scanned below an executable range for the ELF header. GNU ld's default -z separate-code
 * puts the headers in a read-only first segment with the dynamic symbols and relocations before
 * the code: 0x26000 bytes in Debian 12's libc.so.6, more in large C++ libraries. */
#define DISCOVER_SCAN_PAGES 2048
#define DISCOVER_MAX_NOTE   4096
#define DISCOVER_NAME_MAX   256

struct discover_seg {
    uint64_t start, size; /* runtime, page-rounded (as symbolizer markup mmap elements) */
    uint64_t file_offset; /* page-floored p_offset (when discover_module.file_offsets) */
    uint32_t flags;       /* PF_R | PF_W | PF_X */
};

struct discover_module {
    uint64_t header_va;  /* runtime address of the ELF header */
    uint64_t bias;       /* runtime - link address */
    uint64_t start, end; /* runtime extent of all PT_LOAD segments, page-rounded */
    uint16_t e_type;     /* ET_EXEC / ET_DYN */
    uint8_t build_id[64];
    uint32_t build_id_len; /* 0 if no note was readable */
    /* Its path as the dynamic loader opened it (link map), else DT_SONAME, else "" (the
     * recording then names it after its header address, HVFXT_MODULE_PLACEHOLDER_FMT); an OS
     * layer may name the executable from the process itself. */
    char name[DISCOVER_NAME_MAX];
    uint64_t dynamic, dynamic_size; /* run-time PT_DYNAMIC, 0 if none */
    uint64_t r_debug;               /* DT_DEBUG's value (an executable's loader state), or 0 */
    uint64_t eh_frame_hdr;          /* run-time PT_GNU_EH_FRAME (unwind tables), 0 if none */
    struct discover_seg seg[DISCOVER_MAX_SEGS];
    unsigned nseg;
    bool file_offsets; /* seg[].file_offset are the image's own (read from its headers) */
};

/* Parse the ELF image whose header is at `va`. Returns 0 and fills `m`, or -1 (not an ELF64
 * x86-64 image, or inconsistent headers). */
int discover_elf_at(discover_read_fn read, void *ctx, uint64_t va, struct discover_module *m,
                    struct hv_err *err);

/* An executable range of an address space. */
struct discover_range {
    uint64_t start, end;
};

/* For each range, scan down from its first page at most DISCOVER_SCAN_PAGES pages for "\x7fELF",
 * parse the image, and keep it if the range lies inside its PT_LOAD extent. Once an executable
 * whose DT_DEBUG the loader has set is found, its link map (guestos/generic/link_map.h) names
 * the shared objects by path and finds those whose code was not (yet) mapped. Modules are
 * deduplicated by header address. Returns the number found (<= max). */
size_t discover_modules(discover_read_fn read, void *ctx, const struct discover_range *ranges,
                        size_t nranges, struct discover_module *out, size_t max);
