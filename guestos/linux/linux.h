/* The Linux layer of guestos/: the generic layer's identity, modules and unwinders, plus what a
 * Linux kernel's memory tells about itself (guestos/linux/kernel.h), found on the drain thread.
 * docs/linux-introspection.md. */
#pragma once

#include "guestos/guestos.h"

extern const struct guestos_ops guestos_linux_ops;

/* The layer's state (guestos.priv). */
struct lx_layer;
struct lx_layer *lx_layer_new(void);

/* The layer's kernel unwinder: the guest kernel's ORC tables once discover_kernel() loaded them
 * (guestos/linux/orc_unwind.h), frame pointers before that and for kernels without ORC. */
const struct gw_unwinder *lx_layer_kernel_unwinder(struct lx_layer *l);
