/* The VM's network card (`--net user`, docs/net.md): a virtio network device
 * (vmm/virtio/net.h) behind a virtio-MMIO window after the disks' (vmm/disks.h), with an
 * edge-triggered IOAPIC pin of its own (GSI 6: the floppy controller's ISA line, which no device
 * of the VM uses), and user-mode networking through libslirp behind it (vmm/net/user_net.h).
 * The DSDT describes it as it does the disks. Registers and the guest's transmissions are
 * served on the vCPU thread that exited; frames for the guest come from the network's thread. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/net/net_spec.h"
#include "vmm/net/user_net.h"
#include "vmm/virtio/mmio.h"
#include "vmm/virtio/net.h"

#define VM_NET_MMIO_BASE 0xd0008000u /* after the disks' windows, inside the MMIO gap */
#define VM_NET_GSI       6u

struct vm;

struct vm_net {
    bool present;
    struct virtio_net dev;
    struct virtio_mmio mmio;
    struct user_net *user;
    struct vm *vm;
    struct net_config cfg;
};

/* The card and its network, its forwarded ports bound; nothing when c is NULL or disabled. */
int vm_net_open(struct vm_net *n, struct vm *vm, const struct net_config *c, struct hv_err *err);
int vm_net_start(struct vm_net *n, struct hv_err *err);
void vm_net_stop(struct vm_net *n);
void vm_net_close(struct vm_net *n);
/* A guest access to the card's window: true when it was one. */
bool vm_net_mmio(struct vm_net *n, uint64_t gpa, uint8_t *data, unsigned len, bool is_write);
/* "  net: user-mode (libslirp), tcp 127.0.0.1:8080 -> 10.0.2.15:80; 12 frames sent ..." */
void vm_net_summary(const struct vm_net *n, char *buf, size_t len);
