/* What a VM exit to hvprof was about, as users name it: port I/O with the device and port, MMIO
 * with the device and register, HLT (docs/exits.md). A site is one 32-bit id — the kind in bits
 * 24..31, the device in 16..23 (the port range of vmm/iobus.h, a disk's index, or
 * VM_EXIT_DEV_NET), the port's offset in its range (below 128) or the virtio-MMIO register
 * (offset / 4, or VM_EXIT_REG_CONFIG) in 0..15 — so
 * the exit path classifies an exit without formatting anything, and a recording names its sites
 * once (vm_exit_sites). Only exits that reach user space have sites: KVM handles the others
 * (interrupts, most MSRs, nested page faults, the queue notifications its ioeventfds take)
 * in the kernel and never returns them to a VMM. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct vm;
struct kvm_run;

enum vm_exit_kind {
    VM_EXIT_NONE = 0,
    VM_EXIT_PIO_IN,
    VM_EXIT_PIO_OUT,
    VM_EXIT_MMIO_READ,
    VM_EXIT_MMIO_WRITE,
    VM_EXIT_HLT,
    VM_EXIT_OTHER, /* any other reason the run loop saw; the KVM exit reason is the register */
    VM_EXIT_KINDS
};

#define VM_EXIT_DEV_NET     0x80u /* the network card's window */
#define VM_EXIT_DEV_UNKNOWN 0xffu /* a port or address no device claims */
#define VM_EXIT_REG_CONFIG  0x40u /* virtio-MMIO: the device's configuration space (0x100+) */

static inline uint32_t vm_exit_site_make(enum vm_exit_kind kind, unsigned dev, unsigned reg)
{
    return (uint32_t)kind << 24 | (dev & 0xffu) << 16 | (reg & 0xffffu);
}

static inline enum vm_exit_kind vm_exit_site_kind(uint32_t site)
{
    return (enum vm_exit_kind)(site >> 24);
}

/* The site of the exit in `run` (its exit_reason and payload, as the run loop got them). */
uint32_t vm_exit_site_of(const struct vm *vm, const struct kvm_run *run);
/* Its name: "pio-out serial 0x3f8", "mmio-write virtio-blk0 QueueNotify", "hlt". */
void vm_exit_site_name(const struct vm *vm, uint32_t site, char *buf, size_t len);
/* Every site this VM's devices can give, into out[0..cap); returns how many there are. */
size_t vm_exit_sites(const struct vm *vm, uint32_t *out, size_t cap);
