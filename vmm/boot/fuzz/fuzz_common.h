/* Shared harness for the loader fuzzers: a 32 MiB guest (one RAM slot) allocated once, into
 * which each input is loaded as a kernel file. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/boot/boot.h"

#define FUZZ_MEM (32ull << 20)

/* The harness's guest RAM: libFuzzer calls the target with no context argument, so this one
 * allocation lives in a function-local static. */
static inline struct gmem *fuzz_guest(void)
{
    static struct gmem mem;
    static uint8_t *ram;
    if (!ram) {
        struct hv_err err;
        ram = calloc(1, FUZZ_MEM);
        if (!ram)
            abort();
        gmem_init(&mem);
        if (gmem_add(&mem, 0, FUZZ_MEM, ram, &err))
            abort();
    }
    return &mem;
}

/* Load `data` as the kernel (with a small initrd so placement runs too) and check the result
 * stays inside what the loader promises. */
static inline void fuzz_load(const uint8_t *data, size_t size)
{
    static const uint8_t initrd[4096] = {0x5a};
    struct gmem *mem = fuzz_guest();
    struct boot_config cfg = {.cmdline = "console=ttyS0", .nr_cpus = 2, .mem_bytes = FUZZ_MEM};
    struct boot_image k = {.name = "fuzz", .data = data, .size = size};
    struct boot_image i = {.name = "initrd", .data = initrd, .size = sizeof(initrd)};
    struct boot_entry b;
    struct hv_err err;
    if (boot_load_images(mem, &cfg, &k, &i, &b, &err) == 0) {
        /* Entry and initrd inside RAM, initrd page aligned and clear of the kernel. */
        if (b.entry >= FUZZ_MEM || b.initrd_gpa % 4096 || b.initrd_gpa + b.initrd_size > FUZZ_MEM)
            abort();
        if (b.initrd_gpa < b.kernel_end && b.initrd_gpa + b.initrd_size > b.kernel_gpa)
            abort();
    } else if (strchr(err.msg, '\n') || err.msg[0] == 0) {
        abort(); /* errors are one non-empty line */
    }
}
