/* VMCOREINFO: the text a Linux kernel (CONFIG_CRASH_CORE, 6.9+: CONFIG_VMCORE_INFO; Debian,
 * Ubuntu and Fedora kernels have it) builds once at boot for crash-dump tools, read here from
 * guest memory alone. It names the release, the build-id, the KASLR offset, phys_base and the
 * run-time addresses of kernel symbols (with 6.0+ the kallsyms tables), which is where the
 * Linux layer starts (docs/linux-introspection.md).
 *
 * Layout (kernel/crash_core.c, 6.9+ kernel/vmcore_info.c): `vmcoreinfo_data` is one zeroed page
 * of `KEY=VALUE\n` lines, and `vmcoreinfo_note` a page-aligned ELF note (name "VMCOREINFO",
 * type 0) holding a copy. Both start at offset 0 of a page, so a scan of guest-physical memory
 * tests each 4 KiB frame.
 *
 * The guest's memory is hostile and may hold stale copies from an earlier boot: every line is
 * checked (printable ASCII, KEY=VALUE, at most 4096 bytes in all), values are parsed strictly,
 * and the scan keeps a copy only if every copy it found agrees. Passing the checks does not
 * prove the text is genuine (a guest kernel can forge it consistently); callers cross-check
 * against live CPU state where they can. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

#define LX_VMCOREINFO_MAX 4096 /* VMCOREINFO_BYTES = PAGE_SIZE */

struct lx_vmcoreinfo {
    char text[LX_VMCOREINFO_MAX + 1]; /* the validated text, NUL-terminated */
    size_t len;
    char osrelease[65]; /* __NEW_UTS_LEN + 1 */
    uint8_t build_id[20];
    bool has_build_id;
    uint64_t kernel_offset; /* KERNELOFFSET: the KASLR slide of the kernel image */
    bool has_kernel_offset;
    uint64_t gpa;    /* where the copy that was parsed lies (0 when parsed from a buffer) */
    unsigned copies; /* agreeing copies the scan found */
};

/* Parse `len` bytes of VMCOREINFO text (up to the first NUL). Needs an OSRELEASE line; refuses
 * non-printable bytes, lines without '=', and malformed BUILD-ID/KERNELOFFSET values. */
int lx_vmcoreinfo_parse(const char *text, size_t len, struct lx_vmcoreinfo *out,
                        struct hv_err *err);

/* The value of line `key` ("SYMBOL(_stext)", "OFFSET(uts_namespace.name)", ...): a pointer into
 * v->text and its length, or false. */
bool lx_vmcoreinfo_get(const struct lx_vmcoreinfo *v, const char *key, const char **value,
                       size_t *len);
/* SYMBOL(name)=hex (no 0x): a run-time address. */
bool lx_vmcoreinfo_symbol(const struct lx_vmcoreinfo *v, const char *name, uint64_t *addr);
/* NUMBER(name), OFFSET(name), SIZE(name), LENGTH(name): signed or unsigned decimal. */
bool lx_vmcoreinfo_decimal(const struct lx_vmcoreinfo *v, const char *key, int64_t *value);

/* Scan guest-physical memory page by page for the data page and the note. Returns 1 and fills
 * *out with a copy when all copies found agree, 0 when there is none (a kernel without
 * CONFIG_CRASH_CORE, or one that has not reached its subsys initcalls), -1 with err when copies
 * disagree (a stale or forged one: nothing is trusted). */
int lx_vmcoreinfo_find(const struct gmem *mem, struct lx_vmcoreinfo *out, struct hv_err *err);
