/* libFuzzer: VMCOREINFO from hostile guest memory. The input is guest RAM (page-rounded); the
 * scan and the parser must never read outside it, whatever the pages hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/linux/vmcoreinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t len = (size + 4095) & ~(size_t)4095;
    if (len == 0 || len > (1u << 20))
        return 0;
    uint8_t *ram = calloc(1, len); /* exactly the RAM, so ASan sees any over-read */
    if (!ram)
        return 0;
    memcpy(ram, data, size);
    struct gmem mem;
    gmem_init(&mem);
    if (gmem_add(&mem, 0x100000, len, ram, NULL) == 0) {
        static struct lx_vmcoreinfo v;
        if (lx_vmcoreinfo_find(&mem, &v, NULL) == 1) {
            uint64_t a;
            int64_t d;
            (void)lx_vmcoreinfo_symbol(&v, "_stext", &a);
            (void)lx_vmcoreinfo_decimal(&v, "NUMBER(phys_base)", &d);
        }
    }
    free(ram);
    return 0;
}
