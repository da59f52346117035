#include "vmm/netdev.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vmm/vm.h"

/* QEMU's first user-network MAC (52:54:00 is QEMU's prefix, locally administered). */
static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

/* Edge-triggered: a pulse per interrupt (as the disks'). */
static void net_irq(void *ctx, bool level)
{
    struct vm_net *n = ctx;
    if (!level)
        return;
    struct kvm_irq_level up = {.irq = VM_NET_GSI, .level = 1}, down = {.irq = VM_NET_GSI};
    (void)ioctl(n->vm->vm_fd, KVM_IRQ_LINE, &up);
    (void)ioctl(n->vm->vm_fd, KVM_IRQ_LINE, &down);
}

static void to_guest(void *ctx, const uint8_t *frame, size_t len)
{
    struct vm_net *n = ctx;
    virtio_net_receive(&n->dev, frame, len);
}

static void flush(void *ctx)
{
    struct vm_net *n = ctx;
    virtio_net_flush(&n->dev);
}

static void from_guest(void *ctx, const uint8_t *frame, size_t len)
{
    struct vm_net *n = ctx;
    user_net_input(n->user, frame, len);
}

static void rx_ready(void *ctx)
{
    struct vm_net *n = ctx;
    user_net_wake(n->user);
}

int vm_net_open(struct vm_net *n, struct vm *vm, const struct net_config *c, struct hv_err *err)
{
    memset(n, 0, sizeof(*n));
    if (!c || !c->enabled)
        return 0;
    n->cfg = *c;
    n->vm = vm;
    if (virtio_net_init(&n->dev, c->has_mac ? c->mac : mac) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    struct user_net_ops ops = {to_guest, flush, n};
    if (user_net_open(&n->user, c, &ops, err) < 0) {
        virtio_net_destroy(&n->dev);
        return -1;
    }
    n->dev.send = from_guest;
    n->dev.send_ctx = n;
    n->dev.rx_ready = rx_ready;
    n->dev.rx_ctx = n;
    n->dev.transport = &n->mmio;
    virtio_mmio_init(&n->mmio, &virtio_net_ops, &n->dev, &vm->gmem, net_irq, n);
    n->present = true;
    return 0;
}

int vm_net_start(struct vm_net *n, struct hv_err *err)
{
    return n->present ? user_net_start(n->user, err) : 0;
}

void vm_net_stop(struct vm_net *n)
{
    if (n->present)
        user_net_stop(n->user);
}

void vm_net_close(struct vm_net *n)
{
    if (!n->present)
        return;
    user_net_close(n->user); /* its thread first: it delivers into the device */
    n->user = NULL;
    virtio_mmio_destroy(&n->mmio);
    virtio_net_destroy(&n->dev);
    n->present = false;
}

bool vm_net_mmio(struct vm_net *n, uint64_t gpa, uint8_t *data, unsigned len, bool is_write)
{
    if (!n->present || gpa < VM_NET_MMIO_BASE || gpa - VM_NET_MMIO_BASE >= VIRTIO_MMIO_SIZE)
        return false;
    virtio_mmio_access(&n->mmio, (uint32_t)(gpa - VM_NET_MMIO_BASE), is_write, data, len);
    return true;
}

void vm_net_summary(const struct vm_net *n, char *buf, size_t len)
{
    buf[0] = 0;
    if (!n->present)
        return;
    size_t at = (size_t)snprintf(buf, len, "  net: user-mode networking (libslirp%s)",
                                 n->cfg.restrict_outside ? ", restrict=on"
                                 : n->cfg.host_open      ? ", host=on: the host's own addresses open"
                                                         : "");
    for (unsigned i = 0; i < n->cfg.nfwd && at < len; i++) {
        char f[96];
        net_hostfwd_describe(&n->cfg.fwd[i], f, sizeof(f));
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "; forwarded: ", f);
    }
    const struct virtio_net *d = &n->dev;
    if (at < len)
        snprintf(buf + at, len - at,
                 "; %" PRIu64 " frames from the guest (%" PRIu64 " bytes), %" PRIu64
                 " to it (%" PRIu64 " bytes), %" PRIu64 " dropped for want of its receive "
                 "buffers or too long, %" PRIu64 " IPv4 fragments from it dropped, %" PRIu64
                 " packets to the host's own addresses dropped, %" PRIu64 " malformed\n",
                 d->tx_frames, d->tx_bytes, d->rx_frames, d->rx_bytes,
                 d->rx_dropped + d->tx_dropped, user_net_fragments_dropped(n->user),
                 user_net_host_dropped(n->user), user_net_guest_errors(n->user));
}
