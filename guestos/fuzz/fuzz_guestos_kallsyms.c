/* libFuzzer: a guest kernel whose kallsyms tables (and the VMCOREINFO that locates them) are
 * forged. The input is the guest's RAM: its first page is taken as the VMCOREINFO text, and the
 * kernel image is mapped over the whole RAM (phys_base chosen so that the image's first byte is
 * guest-physical 0), so every table pointer the text names can land anywhere in the input. The
 * decode must stay inside RAM and bounded whatever the bytes say. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/fuzz/fuzz_ram.h"
#include "guestos/linux/kallsyms.h"
#include "guestos/linux/kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ctx, uint64_t addr, char type, const char *name, size_t len,
                 struct hv_err *err)
{
    (void)addr;
    (void)type;
    (void)name;
    (void)len;
    (void)err;
    ++*(size_t *)ctx;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gmem mem;
    uint8_t *ram = size < 16 ? NULL : fuzz_ram(data, size, 4u << 20, 0, &mem);
    if (!ram)
        return 0;
    static struct lx_vmcoreinfo v;
    size_t tlen = size < 4096 ? size : 4096;
    if (lx_vmcoreinfo_parse((const char *)ram, tlen, &v, NULL) == 0) {
        struct lx_kimage k = {.mem = &mem, .phys_base = 0, .image_size = mem.slot[0].size};
        size_t n = 0;
        struct lx_kallsyms_info info;
        struct lx_kallsyms_loc loc;
        uint64_t stext = 0;
        (void)lx_vmcoreinfo_symbol(&v, "_stext", &stext);
        if (lx_kallsyms_loc_from_vmcoreinfo(&v, &loc))
            (void)lx_kallsyms_decode(&k, &loc, stext, count, &n, &info, NULL);
    }
    /* the tables found by their structure anywhere in the image, and decoded */
    {
        struct lx_kimage k = {.mem = &mem, .phys_base = 0, .image_size = mem.slot[0].size};
        struct lx_kallsyms_loc loc;
        size_t n = 0;
        struct lx_kallsyms_info info;
        if (lx_kallsyms_find(&k, LX_START_KERNEL_MAP, LX_START_KERNEL_MAP + k.image_size, &loc,
                             NULL) == 0)
            (void)lx_kallsyms_decode(&k, &loc, LX_START_KERNEL_MAP, count, &n, &info, NULL);
    }
    /* and the whole discovery, scan included */
    struct lx_kernel *kern = lx_kernel_new();
    if (kern) {
        (void)lx_kernel_discover(kern, &mem, NULL);
        lx_kernel_free(kern);
    }
    free(ram);
    return 0;
}
