/* The VM's disks: each a virtio block device (vmm/virtio/blk.h) behind a virtio-MMIO window
 * (vmm/virtio/mmio.h) in the MMIO gap, with an edge-triggered IOAPIC pin. The DSDT describes
 * them (vmm/boot/acpi.h), so a Linux guest's virtio_mmio driver finds them with no command-line
 * help (docs/virtio.md). Registers are served on the vCPU thread that exited. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/virtio/blk.h"
#include "vmm/virtio/mmio.h"

#define VM_MAX_DISKS        4u
#define VM_DISK_MMIO_BASE   0xd0000000u /* inside the MMIO gap (vmm/boot/hvprof_boot.h) */
#define VM_DISK_MMIO_STRIDE 0x1000u

struct vm;

struct vm_disk {
    const char *path; /* a raw image file or block device */
    enum virtio_blk_mode mode;
};

struct vm_disk_dev {
    struct virtio_blk blk;
    struct virtio_mmio mmio;
    struct vm *vm;
    uint32_t gsi;
};

struct vm_disks {
    struct vm_disk_dev *v;
    unsigned n;
};

/* Disk i's register window and interrupt (GSIs 5, 7, 10, 11: ISA lines no device of the VM
 * uses). */
uint32_t vm_disk_base(unsigned i);
uint32_t vm_disk_gsi(unsigned i);

int vm_disks_open(struct vm_disks *d, struct vm *vm, const struct vm_disk *cfg, unsigned n,
                  struct hv_err *err);
/* An MMIO exit: true if it hit a disk's window (reads filled), false otherwise. */
bool vm_disks_mmio(struct vm_disks *d, uint64_t gpa, uint8_t *data, unsigned len, bool is_write);
void vm_disks_close(struct vm_disks *d);
