#include "vmm/disks.h"

#include <stdlib.h>
#include <sys/ioctl.h>

#include "vmm/vm.h"

static const uint32_t gsis[VM_MAX_DISKS] = {5, 7, 10, 11};

uint32_t vm_disk_base(unsigned i)
{
    return VM_DISK_MMIO_BASE + i * VM_DISK_MMIO_STRIDE;
}

uint32_t vm_disk_gsi(unsigned i)
{
    return gsis[i % VM_MAX_DISKS];
}

/* The DSDT declares the pin edge-triggered: an interrupt is a rising edge, so the line is
 * pulsed (the transport's "lower" after the driver's acknowledgement has nothing left to do). */
static void disk_irq(void *ctx, bool level)
{
    struct vm_disk_dev *dd = ctx;
    if (!level)
        return;
    struct kvm_irq_level up = {.irq = dd->gsi, .level = 1}, down = {.irq = dd->gsi, .level = 0};
    /* Fails only if the irqchip is gone; the guest then sees no interrupt. */
    (void)ioctl(dd->vm->vm_fd, KVM_IRQ_LINE, &up);
    (void)ioctl(dd->vm->vm_fd, KVM_IRQ_LINE, &down);
}

int vm_disks_open(struct vm_disks *d, struct vm *vm, const struct vm_disk *cfg, unsigned n,
                  struct hv_err *err)
{
    d->v = NULL;
    d->n = 0;
    if (n == 0)
        return 0;
    if (n > VM_MAX_DISKS)
        return hv_errf(err, "--disk: %u disks, at most %u", n, VM_MAX_DISKS);
    d->v = calloc(n, sizeof(*d->v));
    if (!d->v)
        return hv_errf(err, "out of memory");
    for (unsigned i = 0; i < n; i++) {
        struct vm_disk_dev *dd = &d->v[i];
        if (virtio_blk_open(&dd->blk, cfg[i].path, cfg[i].mode, err) < 0) {
            hv_err_prefix(err, "--disk");
            vm_disks_close(d);
            return -1;
        }
        dd->vm = vm;
        dd->gsi = vm_disk_gsi(i);
        virtio_mmio_init(&dd->mmio, &virtio_blk_ops, &dd->blk, &vm->gmem, disk_irq, dd);
        d->n = i + 1;
    }
    return 0;
}

bool vm_disks_mmio(struct vm_disks *d, uint64_t gpa, uint8_t *data, unsigned len, bool is_write)
{
    for (unsigned i = 0; i < d->n; i++) {
        uint64_t base = vm_disk_base(i);
        if (gpa >= base && gpa - base < VIRTIO_MMIO_SIZE) {
            virtio_mmio_access(&d->v[i].mmio, (uint32_t)(gpa - base), is_write, data, len);
            return true;
        }
    }
    return false;
}

void vm_disks_close(struct vm_disks *d)
{
    for (unsigned i = 0; i < d->n; i++) {
        virtio_mmio_destroy(&d->v[i].mmio);
        virtio_blk_close(&d->v[i].blk);
    }
    free(d->v);
    d->v = NULL;
    d->n = 0;
}
