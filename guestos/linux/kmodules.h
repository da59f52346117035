/* Loaded kernel modules of a Linux guest, read from its memory alone (docs/linux-introspection.md,
 * "Kernel modules"): the kernel's `modules` list of struct module, each module's name, state,
 * code region and its own symbol table (struct mod_kallsyms), with every offset from the
 * kernel's BTF. Modules live in the module area, which only the kernel's page tables map, so
 * every read goes through init_top_pgt (VMCOREINFO SYMBOL(init_top_pgt), 4- or 5-level as
 * NUMBER(pgtable_l5_enabled) says). Drain thread only.
 *
 * The guest's memory is hostile and changes while it is read: the list walk is bounded and
 * detects cycles by count, every size and address is checked, names are sanitized, and a module
 * whose fields do not make sense is skipped, never trusted.
 *
 *   struct lx_kmods r;
 *   if (lx_kmods_init(&r, k, mem, why, sizeof(why)) == 0) {
 *       n = lx_kmods_list(&r, mods, max, &err);           // the live modules now
 *       lx_kmods_symbols(&r, &mods[i], on_sym, ctx, &err); // one module's code symbols
 *   }
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"
#include "guestos/linux/kread.h"
#include "guestwalk/paging.h"

struct lx_kernel;

#define LX_KMOD_NAME_LEN   56   /* MODULE_NAME_LEN = 64 - sizeof(unsigned long) */
#define LX_KMODS_MAX       4096 /* list entries followed at most */
#define LX_KMOD_MAX_TEXT   (256ull << 20)
#define LX_KMOD_MAX_SYMS   (1u << 18) /* symbols read from one module's table at most */
#define LX_KMOD_MAX_SYMLEN 255        /* a longer name is cut here */

/* Offsets in struct module and struct mod_kallsyms, from BTF. */
struct lx_kmod_layout {
    uint64_t list, name, name_size, state;
    uint64_t text_base; /* the MOD_TEXT region's base pointer (6.4+: mem[0].base) */
    uint64_t text_size; /* its size, an unsigned int (core_layout.text_size or mem[0].size) */
    uint64_t kallsyms;  /* struct mod_kallsyms * */
    uint64_t ks_symtab, ks_num_symtab, ks_strtab;
    /* struct mod_arch_specific's ORC tables (arch/x86/include/asm/module.h): num_orcs,
     * orc_unwind_ip, orc_unwind; orc_known false when BTF has them not. */
    bool orc_known;
    uint64_t orc_num, orc_ip, orc;
};

struct lx_kmods {
    struct lx_kread kr; /* the kernel's page tables */
    uint64_t head;      /* run-time address of the `modules` list head */
    struct lx_kmod_layout lay;
};

/* One loaded module as the list showed it. */
struct lx_kmod {
    uint64_t addr; /* its struct module */
    char name[LX_KMOD_NAME_LEN + 1];
    uint64_t text, text_size; /* its code region */
    uint64_t kallsyms;        /* its struct mod_kallsyms */
};

/* Layout from the kernel's BTF and the roots from its VMCOREINFO. 0, or -1 with why (a kernel
 * without BTF, modules or the symbols needed). */
int lx_kmods_init(struct lx_kmods *r, const struct lx_kernel *k, const struct gmem *mem, char *why,
                  size_t why_len);

/* The same from parts (tests, and lx_kmods_init): the list head's address, the layout, and
 * the guest-physical address of the kernel's top page table (5-level if la57). */
int lx_kmods_init_raw(struct lx_kmods *r, const struct gmem *mem, uint64_t head,
                      const struct lx_kmod_layout *lay, uint64_t root, bool la57, char *why,
                      size_t why_len);

/* The live modules (state MODULE_STATE_LIVE: a module still coming up is found at a later
 * call) in list order, at most max. Returns the number written, or -1 with err when the list
 * itself cannot be read (its head unmapped, a broken link). */
int lx_kmods_list(struct lx_kmods *r, struct lx_kmod *out, size_t max, struct hv_err *err);

/* A code symbol of a module: its run-time address, 't' (local) or 'T' (global), and its name
 * (not NUL-terminated, printable ASCII). Return nonzero to stop. */
typedef int (*lx_kmod_sym_fn)(void *ctx, uint64_t addr, char type, const char *name, size_t len);

/* Calls fn for each symbol of m's table that lies in m's code region. Returns the number of
 * symbols given, or -1 with err (the table cannot be read). */
long lx_kmods_symbols(struct lx_kmods *r, const struct lx_kmod *m, lx_kmod_sym_fn fn, void *ctx,
                      struct hv_err *err);
