/* The Linux layer of guestos/: the generic layer's identity, modules and unwinders, plus what a
 * Linux kernel's memory tells about itself (guestos/linux/kernel.h), found on the drain thread.
 * docs/linux-introspection.md. */
#pragma once

#include "guestos/guestos.h"

extern const struct guestos_ops guestos_linux_ops;

/* The layer's state (guestos.priv). */
struct lx_layer;
struct lx_layer *lx_layer_new(void);
