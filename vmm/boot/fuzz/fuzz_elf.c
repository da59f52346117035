/* libFuzzer: the input is an ELF64 kernel file. Seeds in corpus/fuzz_boot_elf/. */
#include "vmm/boot/elf64.h"
#include "vmm/boot/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct elf64_info info;
    struct hv_err err;
    (void)elf64_parse(data, size, &info, &err);
    fuzz_load(data, size);
    return 0;
}
