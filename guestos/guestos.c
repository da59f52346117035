#include "guestos/guestos.h"

#include <string.h>

#include "guestos/generic/generic.h"
#include "guestwalk/cfi_unwind.h"
#include "guestos/linux/linux.h"

int guestos_open(struct guestos *os, const char *name, struct hv_err *err)
{
    /* User stacks: DWARF CFI where the sampler published tables for the address space
     * (gw_walker.cfi), frame pointers elsewhere (guestwalk/cfi_unwind.h). */
    *os = (struct guestos){.user_unwinder = &gw_cfi_unwinder, .kernel_unwinder = &gw_fp_unwinder};
    if (!name || !strcmp(name, "generic")) {
        os->ops = &guestos_generic_ops;
        return 0;
    }
    if (!strcmp(name, "linux")) {
        os->ops = &guestos_linux_ops;
        os->priv = lx_layer_new();
        if (!os->priv)
            return hv_errk(err, HV_ERR_NO_MEMORY, "guest OS layer linux: out of memory");
        os->kernel_unwinder = lx_layer_kernel_unwinder(os->priv);
        return 0;
    }
    return hv_errf(err, "unknown guest OS '%s' (known: %s)", name, GUESTOS_NAMES);
}

void guestos_close(struct guestos *os)
{
    if (os->ops && os->ops->close)
        os->ops->close(os);
    os->priv = NULL;
}
