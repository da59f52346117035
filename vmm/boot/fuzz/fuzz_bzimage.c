/* libFuzzer: the input is a bzImage file. Seeds in corpus/fuzz_boot_bzimage/. */
#include "vmm/boot/bzimage.h"
#include "vmm/boot/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bzimage_info info;
    struct hv_err err;
    (void)bzimage_parse(data, size, &info, &err);
    fuzz_load(data, size);
    return 0;
}
