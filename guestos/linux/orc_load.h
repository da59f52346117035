/* The guest kernel's ORC tables copied into host memory (drain thread, once the kernel is
 * described): located through kallsyms (__start_orc_unwind_ip, __stop_orc_unwind_ip,
 * __start_orc_unwind; data symbols, so CONFIG_KALLSYMS_ALL), read from the kernel image, decoded
 * with the layout the guest's BTF (else its release) gives, and checked: a layout that decodes
 * most entries as undefined or with fields no kernel writes is refused. docs/orc.md. */
#pragma once

#include <stddef.h>

#include "guestos/linux/kernel.h"
#include "guestos/linux/orc_unwind.h"

/* A new struct lx_orc for k's image, or NULL with why (no tables in kallsyms, unreadable,
 * implausible). `how` says what was loaded, for the summary. */
struct lx_orc *lx_orc_load(const struct lx_kernel *k, char *how, size_t how_len);
void lx_orc_free(struct lx_orc *o);

struct lx_kmods;
struct lx_kmod;

/* A loaded module's own tables (struct module's arch.orc_unwind_ip, arch.orc_unwind and
 * arch.num_orcs, sorted by the kernel when it loaded the module), through the kernel's page
 * tables, with the kernel's layout: IPs outside the module's code region are dropped. 0, or -1
 * with why. */
int lx_orc_load_module(struct lx_kmods *r, const struct lx_kmod *m,
                       const struct lx_orc_layout *layout, struct lx_orc_table *t, char *why,
                       size_t why_len);
