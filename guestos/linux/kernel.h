/* A Linux guest's kernel, understood from its memory alone (docs/linux-introspection.md):
 * VMCOREINFO tells the release, the build-id, the KASLR offset and where the image lies
 * physically (phys_base); the image's own kallsyms tables give its symbols at run-time
 * addresses. Runs on the drain thread, off the exit path, and may be retried until the guest has
 * written VMCOREINFO (a subsys_initcall, a second or so into its boot).
 *
 *   struct lx_kernel *k = lx_kernel_new();
 *   rc = lx_kernel_discover(k, mem, &err);   // 1 found, 0 not yet, -1 unusable (err says why)
 *   ... k->syms.v[0..syms.n): code symbols in address order; k->sym.*: data the task walk needs
 *   lx_kernel_free(k);
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/vector.h"
#include "guestos/linux/btf.h"
#include "guestos/linux/kallsyms.h"
#include "guestos/linux/kimage.h"
#include "guestos/linux/vmcoreinfo.h"
#include "guestwalk/gmem.h"

/* A code symbol (nm type t, T, w or W) at its run-time address; type 0 with an empty name is an
 * end marker (_etext, _einittext): addresses from there on belong to no symbol before it. */
struct lx_ksym {
    uint64_t addr;
    uint32_t name; /* offset into lx_kernel.names */
    uint16_t name_len;
    char type;
};

/* Offsets in struct task_struct, from the kernel's BTF (0 size: not known). */
struct lx_task_layout {
    bool known;
    uint64_t pid, tgid, comm, mm, flags, group_leader;
    uint64_t comm_size;
    uint64_t mm_pgd; /* struct mm_struct: pgd, the address space's top-level table */
    uint64_t stack;  /* task_struct.stack, its kernel stack's base (0: not in BTF) */
};

struct lx_kernel {
    struct lx_vmcoreinfo vmci;
    struct lx_kimage img;
    struct lx_kallsyms_info ks;
    struct lx_kallsyms_loc ks_loc; /* where the tables were: VMCOREINFO's, or found */
    /* Where the structural search for kallsyms starts (0: at _stext). The capture sets it to
     * the token table's page found before, so that it stores only the pages decoding needs;
     * the search on the capture then reads zeros up to there and finds the same tables. */
    uint64_t kallsyms_scan_from;
    uint64_t kaslr_offset; /* KERNELOFFSET: run-time - link-time address of the image */
    VECTOR(struct lx_ksym) syms;
    VECTOR(char) names; /* NUL-separated pool */
    uint64_t text_lo, text_hi; /* run-time extent of the code symbols */
    /* Run-time addresses of data symbols the Linux layer reads (0: not in the table; data
     * symbols need CONFIG_KALLSYMS_ALL). Per-CPU ones are offsets into a CPU's area. */
    struct {
        uint64_t current_task, pcpu_hot, per_cpu_offset, nr_cpu_ids, init_task;
        uint64_t start_btf, stop_btf, entry_syscall_64, modules;
        uint64_t start_orc_ip, stop_orc_ip, start_orc; /* the ORC tables (orc.h) */
        uint64_t entry_syscall_64_after_hwframe;
        uint64_t panic_cpu; /* kernel/panic.c: atomic_t, -1 until panic() or crash_kexec() */
        /* arch/x86/mm/init_64.c: where struct page array starts (KASLR'd with
         * CONFIG_RANDOMIZE_MEMORY); a variable, its value read when needed. */
        uint64_t vmemmap_base;
    } sym;
    /* The kernel's BTF (CONFIG_DEBUG_INFO_BTF), when kallsyms locates it, and what it says. */
    struct lx_btf btf;
    uint32_t btf_types;
    struct lx_task_layout task;
    char btf_note[160]; /* why BTF or the task layout is missing, or how it was checked */
};

struct lx_kernel *lx_kernel_new(void);
void lx_kernel_free(struct lx_kernel *k);

/* Find VMCOREINFO in guest RAM, check it against the memory it describes (the release string
 * at init_uts_ns read through phys_base), and decode kallsyms. 1: k is filled; 0: no VMCOREINFO
 * in RAM yet; -1: err says why this kernel cannot be read (copies that disagree, a kernel
 * before 6.0 whose kallsyms tables are not found by their structure either, tables that do not
 * decode). */
int lx_kernel_discover(struct lx_kernel *k, const struct gmem *mem, struct hv_err *err);

/* The same after the VMCOREINFO scan: from k->vmci as lx_vmcoreinfo_find() left it (the capture
 * of test data runs the scan apart, tests/tools/capture/capture.c). 1, or -1 with err. */
int lx_kernel_describe(struct lx_kernel *k, const struct gmem *mem, struct hv_err *err);

static inline const char *lx_ksym_name(const struct lx_kernel *k, const struct lx_ksym *s)
{
    return k->names.v + s->name;
}
