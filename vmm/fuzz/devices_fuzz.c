/* libFuzzer target: a guest's port I/O is untrusted input. Feed arbitrary sequences of
 * (port, direction, size, data) accesses through the VM's real port bus and device models
 * (UART, i8042, CMOS, PCI, debug exit) without KVM. Record = 8 bytes:
 * port (2, LE), flags (1: bit 0 = write, bits 1-2 = size 1/2/4), pad, data (4). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vm *vm = calloc(1, sizeof(*vm));
    if (!vm)
        return 0;
    vm->vm_fd = -1; /* KVM_IRQ_LINE fails harmlessly: the model still runs */
    sem_init(&vm->wake, 0, 0);
    struct hv_err err;
    if (vm_devices_init(&vm->dev, vm, -1, 0, &err) < 0)
        abort();
    for (size_t off = 0; off + 8 <= size; off += 8) {
        uint16_t port = (uint16_t)(data[off] | data[off + 1] << 8);
        uint8_t flags = data[off + 2];
        static const unsigned sizes[4] = {1, 2, 4, 1};
        unsigned n = sizes[(flags >> 1) & 3];
        uint8_t buf[4];
        memcpy(buf, data + off + 4, 4);
        iobus_dispatch(&vm->dev.bus, port, flags & 1, buf, n);
    }
    /* The only state a stop may leave: a claimed result with a bounded detail string. */
    if (atomic_load(&vm->stopping) &&
        strnlen(vm->result.detail, sizeof(vm->result.detail)) == sizeof(vm->result.detail))
        abort();
    vm_devices_destroy(&vm->dev);
    sem_destroy(&vm->wake);
    free(vm);
    return 0;
}
