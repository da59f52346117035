/* Exit sites (vmm/exit_sites.h): what an exit in kvm_run is about and its name, pinned for port
 * I/O, each virtio-MMIO register of a disk and the network card, the configuration space,
 * addresses and ports no device claims, and HLT; every site the VM can give is enumerated, and
 * their report frames (hvfxt_exit_frame) are distinct and inside the range the recording names. */
#include <linux/kvm.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "schema/schema.h"
#include "vmm/disks.h"
#include "vmm/exit_sites.h"
#include "vmm/netdev.h"
#include "vmm/vm.h"

static void nop_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    (void)ctx, (void)port, (void)is_write, (void)data, (void)size;
}

static struct vm *make_vm(void)
{
    struct vm *vm = calloc(1, sizeof(*vm));
    assert_non_null(vm);
    iobus_init(&vm->dev.bus);
    assert_int_equal(iobus_register(&vm->dev.bus, 0x3f8, 8, "serial", nop_port, NULL, NULL), 0);
    assert_int_equal(iobus_register(&vm->dev.bus, 0x80, 1, "post", nop_port, NULL, NULL), 0);
    vm->disks.n = 2;
    vm->net.present = true;
    return vm;
}

static const char *name_of(const struct vm *vm, const struct kvm_run *run)
{
    static char buf[96];
    vm_exit_site_name(vm, vm_exit_site_of(vm, run), buf, sizeof(buf));
    return buf;
}

static void test_names(void **state)
{
    (void)state;
    struct vm *vm = make_vm();
    struct kvm_run run = {.exit_reason = KVM_EXIT_IO};
    run.io.port = 0x3fd;
    run.io.direction = KVM_EXIT_IO_IN;
    assert_string_equal(name_of(vm, &run), "pio-in serial 0x3fd");
    assert_int_equal(vm_exit_site_of(vm, &run), vm_exit_site_make(VM_EXIT_PIO_IN, 0, 5));
    run.io.port = 0x80;
    run.io.direction = KVM_EXIT_IO_OUT;
    assert_string_equal(name_of(vm, &run), "pio-out post 0x80");
    run.io.port = 0x1234;
    assert_string_equal(name_of(vm, &run), "pio-out unclaimed");

    run = (struct kvm_run){.exit_reason = KVM_EXIT_MMIO};
    run.mmio.phys_addr = vm_disk_base(1) + 0x50;
    run.mmio.is_write = 1;
    assert_string_equal(name_of(vm, &run), "mmio-write virtio-blk1 QueueNotify");
    run.mmio.phys_addr = vm_disk_base(0) + 0x60;
    run.mmio.is_write = 0;
    assert_string_equal(name_of(vm, &run), "mmio-read virtio-blk0 InterruptStatus");
    run.mmio.phys_addr = vm_disk_base(0) + 0x108;
    assert_string_equal(name_of(vm, &run), "mmio-read virtio-blk0 config");
    run.mmio.phys_addr = vm_disk_base(0) + 0x0e0; /* reserved in VIRTIO 1.2 §4.2.2 */
    assert_string_equal(name_of(vm, &run), "mmio-read virtio-blk0 0x0e0");
    run.mmio.phys_addr = VM_NET_MMIO_BASE + 0x64;
    run.mmio.is_write = 1;
    assert_string_equal(name_of(vm, &run), "mmio-write virtio-net InterruptACK");
    run.mmio.phys_addr = 0xfee00000; /* the LAPIC's page: the kernel's, never a VMM's */
    assert_string_equal(name_of(vm, &run), "mmio-write unclaimed");
    run = (struct kvm_run){.exit_reason = KVM_EXIT_HLT};
    assert_string_equal(name_of(vm, &run), "hlt");
    free(vm);
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_every_site(void **state)
{
    (void)state;
    struct vm *vm = make_vm();
    size_t n = vm_exit_sites(vm, NULL, 0);
    /* 2 x (9 ports + unclaimed) + 3 windows x 2 x 65 registers + 2 unclaimed MMIO + hlt */
    assert_int_equal(n, 2 * 10 + 3 * 2 * 65 + 2 + 1);
    uint32_t *sites = calloc(n, sizeof(*sites));
    uint64_t *frames = calloc(n, sizeof(*frames));
    assert_int_equal(vm_exit_sites(vm, sites, n), n);
    for (size_t i = 0; i < n; i++) {
        frames[i] = hvfxt_exit_frame(sites[i]);
        assert_true(frames[i] >= HVFXT_EXIT_FRAME_BASE &&
                    frames[i] < HVFXT_EXIT_FRAME_BASE + HVFXT_EXIT_FRAME_SIZE);
        char name[96];
        vm_exit_site_name(vm, sites[i], name, sizeof(name));
        assert_null(strstr(name, "unknown site"));
    }
    qsort(frames, n, sizeof(*frames), by_value);
    for (size_t i = 1; i < n; i++)
        assert_true(frames[i] > frames[i - 1]);
    free(sites);
    free(frames);
    free(vm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_every_site),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
