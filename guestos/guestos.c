#include "guestos/guestos.h"

#include <string.h>

#include "guestos/generic/generic.h"

int guestos_open(struct guestos *os, const char *name, struct hv_err *err)
{
    if (!name || !strcmp(name, "generic")) {
        *os = (struct guestos){.ops = &guestos_generic_ops,
                               .user_unwinder = &gw_fp_unwinder,
                               .kernel_unwinder = &gw_fp_unwinder};
        return 0;
    }
    return hv_errf(err, "unknown guest OS layer '%s' (known: generic)", name);
}
