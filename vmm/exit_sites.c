/* Exit sites (exit_sites.h). The virtio-MMIO register names are VIRTIO 1.2 §4.2.2's. */
#include "vmm/exit_sites.h"

#include <linux/kvm.h>
#include <stdio.h>

#include "vmm/disks.h"
#include "vmm/netdev.h"
#include "vmm/virtio/mmio.h"
#include "vmm/vm.h"

/* VIRTIO 1.2 §4.2.2, by offset / 4 (0x000 .. 0x0fc). */
static const char *mmio_reg_name(unsigned reg)
{
    switch (reg * 4) {
    case 0x000:
        return "MagicValue";
    case 0x004:
        return "Version";
    case 0x008:
        return "DeviceID";
    case 0x00c:
        return "VendorID";
    case 0x010:
        return "DeviceFeatures";
    case 0x014:
        return "DeviceFeaturesSel";
    case 0x020:
        return "DriverFeatures";
    case 0x024:
        return "DriverFeaturesSel";
    case 0x030:
        return "QueueSel";
    case 0x034:
        return "QueueNumMax";
    case 0x038:
        return "QueueNum";
    case 0x044:
        return "QueueReady";
    case 0x050:
        return "QueueNotify";
    case 0x060:
        return "InterruptStatus";
    case 0x064:
        return "InterruptACK";
    case 0x070:
        return "Status";
    case 0x080:
        return "QueueDescLow";
    case 0x084:
        return "QueueDescHigh";
    case 0x090:
        return "QueueDriverLow";
    case 0x094:
        return "QueueDriverHigh";
    case 0x0a0:
        return "QueueDeviceLow";
    case 0x0a4:
        return "QueueDeviceHigh";
    case 0x0ac:
        return "SHMSel";
    case 0x0b0:
        return "SHMLenLow";
    case 0x0b4:
        return "SHMLenHigh";
    case 0x0b8:
        return "SHMBaseLow";
    case 0x0bc:
        return "SHMBaseHigh";
    case 0x0c0:
        return "QueueReset";
    case 0x0fc:
        return "ConfigGeneration";
    default:
        return NULL;
    }
}

/* The device of guest-physical address gpa and the register: its index and offset. */
static unsigned mmio_device(const struct vm *vm, uint64_t gpa, uint32_t *off)
{
    for (unsigned i = 0; i < vm->disks.n && i < VM_EXIT_DEV_NET; i++) {
        uint64_t base = vm_disk_base(i);
        if (gpa >= base && gpa - base < VIRTIO_MMIO_SIZE) {
            *off = (uint32_t)(gpa - base);
            return i;
        }
    }
    if (vm->net.present && gpa >= VM_NET_MMIO_BASE && gpa - VM_NET_MMIO_BASE < VIRTIO_MMIO_SIZE) {
        *off = (uint32_t)(gpa - VM_NET_MMIO_BASE);
        return VM_EXIT_DEV_NET;
    }
    *off = 0;
    return VM_EXIT_DEV_UNKNOWN;
}

uint32_t vm_exit_site_of(const struct vm *vm, const struct kvm_run *run)
{
    switch (run->exit_reason) {
    case KVM_EXIT_IO: {
        int r = iobus_find(&vm->dev.bus, run->io.port);
        enum vm_exit_kind k =
            run->io.direction == KVM_EXIT_IO_OUT ? VM_EXIT_PIO_OUT : VM_EXIT_PIO_IN;
        if (r < 0)
            return vm_exit_site_make(k, VM_EXIT_DEV_UNKNOWN, 0);
        return vm_exit_site_make(k, (unsigned)r, run->io.port - vm->dev.bus.range[r].base);
    }
    case KVM_EXIT_MMIO: {
        uint32_t off;
        unsigned dev = mmio_device(vm, run->mmio.phys_addr, &off);
        unsigned reg = off >= 0x100 ? VM_EXIT_REG_CONFIG : off / 4;
        return vm_exit_site_make(run->mmio.is_write ? VM_EXIT_MMIO_WRITE : VM_EXIT_MMIO_READ, dev,
                                 dev == VM_EXIT_DEV_UNKNOWN ? 0 : reg);
    }
    case KVM_EXIT_HLT:
        return vm_exit_site_make(VM_EXIT_HLT, 0, 0);
    default:
        return vm_exit_site_make(VM_EXIT_OTHER, 0, run->exit_reason & 0xffff);
    }
}

static void dev_name(const struct vm *vm, unsigned dev, char *buf, size_t len)
{
    if (dev == VM_EXIT_DEV_NET)
        snprintf(buf, len, "virtio-net");
    else if (dev == VM_EXIT_DEV_UNKNOWN || dev >= vm->disks.n)
        snprintf(buf, len, "unclaimed");
    else
        snprintf(buf, len, "virtio-blk%u", dev);
}

void vm_exit_site_name(const struct vm *vm, uint32_t site, char *buf, size_t len)
{
    unsigned dev = (site >> 16) & 0xff, reg = site & 0xffff;
    char d[32];
    switch (vm_exit_site_kind(site)) {
    case VM_EXIT_PIO_IN:
    case VM_EXIT_PIO_OUT: {
        const char *dir = vm_exit_site_kind(site) == VM_EXIT_PIO_IN ? "in" : "out";
        if (dev >= vm->dev.bus.n) {
            snprintf(buf, len, "pio-%s unclaimed", dir);
            return;
        }
        const struct iobus_range *r = &vm->dev.bus.range[dev];
        snprintf(buf, len, "pio-%s %s 0x%x", dir, r->name, r->base + reg);
        return;
    }
    case VM_EXIT_MMIO_READ:
    case VM_EXIT_MMIO_WRITE: {
        const char *dir = vm_exit_site_kind(site) == VM_EXIT_MMIO_READ ? "read" : "write";
        dev_name(vm, dev, d, sizeof(d));
        const char *rn = reg == VM_EXIT_REG_CONFIG ? "config" : mmio_reg_name(reg);
        if (dev == VM_EXIT_DEV_UNKNOWN)
            snprintf(buf, len, "mmio-%s unclaimed", dir);
        else if (rn)
            snprintf(buf, len, "mmio-%s %s %s", dir, d, rn);
        else
            snprintf(buf, len, "mmio-%s %s 0x%03x", dir, d, reg * 4);
        return;
    }
    case VM_EXIT_HLT:
        snprintf(buf, len, "hlt");
        return;
    case VM_EXIT_OTHER:
        snprintf(buf, len, "other reason-%u", reg);
        return;
    default:
        snprintf(buf, len, "unknown site 0x%08x", site);
        return;
    }
}

static void add(uint32_t *out, size_t cap, size_t *n, uint32_t site)
{
    if (*n < cap)
        out[*n] = site;
    (*n)++;
}

static void add_mmio(uint32_t *out, size_t cap, size_t *n, unsigned dev)
{
    for (unsigned k = VM_EXIT_MMIO_READ; k <= VM_EXIT_MMIO_WRITE; k++) {
        for (unsigned reg = 0; reg < 0x40; reg++)
            add(out, cap, n, vm_exit_site_make(k, dev, reg));
        add(out, cap, n, vm_exit_site_make(k, dev, VM_EXIT_REG_CONFIG));
    }
}

size_t vm_exit_sites(const struct vm *vm, uint32_t *out, size_t cap)
{
    size_t n = 0;
    for (unsigned k = VM_EXIT_PIO_IN; k <= VM_EXIT_PIO_OUT; k++) {
        for (unsigned r = 0; r < vm->dev.bus.n; r++)
            for (unsigned p = 0; p < vm->dev.bus.range[r].len && p < 0x80; p++)
                add(out, cap, &n, vm_exit_site_make(k, r, p));
        add(out, cap, &n, vm_exit_site_make(k, VM_EXIT_DEV_UNKNOWN, 0));
    }
    for (unsigned i = 0; i < vm->disks.n && i < VM_EXIT_DEV_NET; i++)
        add_mmio(out, cap, &n, i);
    if (vm->net.present)
        add_mmio(out, cap, &n, VM_EXIT_DEV_NET);
    add(out, cap, &n, vm_exit_site_make(VM_EXIT_MMIO_READ, VM_EXIT_DEV_UNKNOWN, 0));
    add(out, cap, &n, vm_exit_site_make(VM_EXIT_MMIO_WRITE, VM_EXIT_DEV_UNKNOWN, 0));
    add(out, cap, &n, vm_exit_site_make(VM_EXIT_HLT, 0, 0));
    return n;
}
