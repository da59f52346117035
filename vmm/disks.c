#include "vmm/disks.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
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
    d->stop_fd = -1;
    d->started = false;
    snprintf(d->served, sizeof(d->served), "not started");
    if (n == 0)
        return 0;
    if (n > VM_MAX_DISKS)
        return hv_errf(err, "--disk: %u disks, at most %u", n, VM_MAX_DISKS);
    d->v = calloc(n, sizeof(*d->v));
    if (!d->v)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    for (unsigned i = 0; i < n; i++) {
        struct vm_disk_dev *dd = &d->v[i];
        if (virtio_blk_open(&dd->blk, cfg[i].path, cfg[i].mode, &cfg[i].image, err) < 0) {
            hv_err_prefix(err, "--disk");
            vm_disks_close(d);
            return -1;
        }
        dd->vm = vm;
        dd->gsi = vm_disk_gsi(i);
        dd->kick_fd = dd->stop_fd = -1;
        dd->blk.stop = &vm->stopping; /* a request's data stops moving when the VM stops */
        virtio_mmio_init(&dd->mmio, &virtio_blk_ops, &dd->blk, &vm->gmem, disk_irq, dd);
        d->n = i + 1;
    }
    return 0;
}

/* One disk's I/O thread: every wake-up of its ioeventfd is a QueueNotify of queue 0 (the block
 * device's only queue) that KVM took in the kernel; it serves the queue as the register write
 * would have, until the shared stop eventfd fires. */
static void *io_thread(void *arg)
{
    struct vm_disk_dev *dd = arg;
    pthread_setname_np(pthread_self(), "disk");
    sandbox_thread_enter(SANDBOX_DISK); /* the image's descriptors only: no file, no socket */
    struct pollfd p[2] = {{.fd = dd->kick_fd, .events = POLLIN},
                          {.fd = dd->stop_fd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        uint64_t kicks;
        if (read(dd->kick_fd, &kicks, sizeof(kicks)) == sizeof(kicks)) {
            dd->thread_kicks += kicks;
            virtio_mmio_notify(&dd->mmio, 0);
        }
    }
    return NULL;
}

/* KVM_IOEVENTFD for writes of 0 (queue 0) to the disk's QueueNotify register; other values
 * still exit to user space (and are ignored there: the device has one queue). */
static int ioeventfd(struct vm_disk_dev *dd, unsigned i, bool assign)
{
    struct kvm_ioeventfd io = {
        .datamatch = 0,
        .addr = vm_disk_base(i) + VIRTIO_MMIO_QUEUE_NOTIFY,
        .len = 4,
        .fd = dd->kick_fd,
        .flags = KVM_IOEVENTFD_FLAG_DATAMATCH | (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
    };
    return ioctl(dd->vm->vm_fd, KVM_IOEVENTFD, &io);
}

int vm_disks_start(struct vm_disks *d, struct hv_err *err)
{
    if (d->n == 0 || d->started)
        return 0;
    d->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (d->stop_fd < 0)
        return hv_errf_errno(err, "--disk: eventfd");
    d->started = true;
    unsigned threads = 0;
    int why = 0;
    for (unsigned i = 0; i < d->n; i++) {
        struct vm_disk_dev *dd = &d->v[i];
        dd->stop_fd = d->stop_fd;
        dd->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (dd->kick_fd < 0 || ioeventfd(dd, i, true) < 0) {
            why = errno;
            if (dd->kick_fd >= 0)
                close(dd->kick_fd);
            dd->kick_fd = -1;
            continue; /* served on the vCPU threads, as before KVM offered ioeventfds */
        }
        int rc = pthread_create(&dd->thread, NULL, io_thread, dd);
        if (rc) {
            ioeventfd(dd, i, false);
            close(dd->kick_fd);
            dd->kick_fd = -1;
            vm_disks_stop(d);
            errno = rc;
            return hv_errf_errno(err, "--disk: the I/O thread of vd%c", 'a' + i);
        }
        threads++;
    }
    if (threads == d->n)
        snprintf(d->served, sizeof(d->served), "on an I/O thread per disk (ioeventfd)");
    else
        snprintf(d->served, sizeof(d->served),
                 "%u of %u disks on the notifying vCPU's thread (KVM_IOEVENTFD: %s)",
                 d->n - threads, d->n, strerror(why));
    return 0;
}

void vm_disks_stop(struct vm_disks *d)
{
    if (!d->started)
        return;
    uint64_t one = 1;
    if (write(d->stop_fd, &one, sizeof(one)) != sizeof(one))
        return; /* cannot happen with a counter this far from its maximum */
    for (unsigned i = 0; i < d->n; i++) {
        struct vm_disk_dev *dd = &d->v[i];
        if (dd->kick_fd < 0)
            continue;
        pthread_join(dd->thread, NULL);
        if (dd->vm->vm_fd >= 0)
            ioeventfd(dd, i, false);
        close(dd->kick_fd);
        dd->kick_fd = -1;
    }
    close(d->stop_fd);
    d->stop_fd = -1;
    d->started = false;
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
    vm_disks_stop(d);
    for (unsigned i = 0; i < d->n; i++) {
        virtio_mmio_destroy(&d->v[i].mmio);
        virtio_blk_close(&d->v[i].blk);
    }
    free(d->v);
    d->v = NULL;
    d->n = 0;
}
