/* libFuzzer: VMCOREINFO from hostile guest memory. The input is guest RAM (page-rounded); the
 * scan and the parser must never read outside it, whatever the pages hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/fuzz/fuzz_ram.h"
#include "guestos/linux/vmcoreinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gmem mem;
    uint8_t *ram = fuzz_ram(data, size, 1u << 20, 0x100000, &mem);
    if (!ram)
        return 0;
    static struct lx_vmcoreinfo v;
    if (lx_vmcoreinfo_find(&mem, &v, NULL) == 1) {
        uint64_t a;
        int64_t d;
        (void)lx_vmcoreinfo_symbol(&v, "_stext", &a);
        (void)lx_vmcoreinfo_decimal(&v, "NUMBER(phys_base)", &d);
    }
    free(ram);
    return 0;
}
