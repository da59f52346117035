/* The VM's disks: each a virtio block device (vmm/virtio/blk.h) behind a virtio-MMIO window
 * (vmm/virtio/mmio.h) in the MMIO gap, with an edge-triggered IOAPIC pin. The DSDT describes
 * them (vmm/boot/acpi.h), so a Linux guest's virtio_mmio driver finds them with no command-line
 * help (docs/virtio.md). Registers are served on the vCPU thread that exited; requests on an I/O
 * thread per disk that KVM wakes through an ioeventfd when the driver writes QueueNotify (the
 * vCPU goes on without leaving the kernel), or on the notifying vCPU's thread where KVM cannot
 * give one (KVM_IOEVENTFD refused). */
#pragma once

#include <pthread.h>
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
    struct image_opts image; /* its format (given or probed once), its backing chain's rules */
};

struct vm_disk_dev {
    struct virtio_blk blk;
    struct virtio_mmio mmio;
    struct vm *vm;
    uint32_t gsi;
    int kick_fd;           /* the ioeventfd of queue 0's notifications, -1 without */
    int stop_fd;           /* the disks' shared "stop" eventfd (struct vm_disks) */
    pthread_t thread;      /* the I/O thread, when kick_fd >= 0 */
    uint64_t thread_kicks; /* wake-ups of the I/O thread (notifications it served) */
};

struct vm_disks {
    struct vm_disk_dev *v;
    unsigned n;
    int stop_fd;
    bool started;
    char served[160]; /* where requests are served, for the summary */
};

/* Disk i's register window and interrupt (GSIs 5, 7, 10, 11: ISA lines no device of the VM
 * uses). */
uint32_t vm_disk_base(unsigned i);
uint32_t vm_disk_gsi(unsigned i);

int vm_disks_open(struct vm_disks *d, struct vm *vm, const struct vm_disk *cfg, unsigned n,
                  struct hv_err *err);
/* Once the VM's file exists: each disk's ioeventfd and I/O thread (or, where KVM refuses the
 * ioeventfd, requests served on the vCPU threads, said in d->served). Fails only when a thread
 * cannot be made. */
int vm_disks_start(struct vm_disks *d, struct hv_err *err);
/* Stops and joins the I/O threads (before the VM's file closes); idempotent. */
void vm_disks_stop(struct vm_disks *d);
/* An MMIO exit: true if it hit a disk's window (reads filled), false otherwise. */
bool vm_disks_mmio(struct vm_disks *d, uint64_t gpa, uint8_t *data, unsigned len, bool is_write);
void vm_disks_close(struct vm_disks *d);
