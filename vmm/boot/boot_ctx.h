/* What boot_load_images() has worked out before the kernel-format-specific loader runs. */
#pragma once

#include <stdint.h>

#include "vmm/boot/boot.h"
#include "vmm/boot/hvprof_boot.h"

struct boot_ctx {
    struct gmem *mem;
    const struct boot_config *cfg;
    struct ram_region ram[2];
    unsigned nram;
    uint64_t low_ram_end; /* end of ram[0]: min(mem, HVPROF_MMIO_GAP_START) */
    struct hvprof_e820 e820[HVPROF_E820_MAX];
    unsigned ne820;
};

/* True if [gpa, gpa + len) lies inside one RAM region (and so inside the gmem). */
int boot_in_ram(const struct boot_ctx *ctx, uint64_t gpa, uint64_t len);
