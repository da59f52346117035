#include "vmm/devices.h"

#include <string.h>
#include <time.h>
#include <sys/ioctl.h>

#include "vmm/boot/hvprof_boot.h"
#include "vmm/vm.h"

static void uart_irq(void *ctx, int level)
{
    struct vm *vm = ctx;
    struct kvm_irq_level irq = {.irq = VM_UART_IRQ, .level = (uint32_t)level};
    /* Fails only if the irqchip is gone; the guest then simply sees no interrupt. */
    (void)ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq);
}

static void uart_tx(void *ctx, uint8_t byte)
{
    struct vm *vm = ctx; /* called under vm->dev.lock from uart_port */
    console_putc(&vm->dev.console, byte);
}

static void uart_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    struct vm_devices *d = ctx;
    pthread_mutex_lock(&d->lock);
    /* A 16-bit access touches two consecutive registers (rep outsw to THR is not a thing Linux
     * does, but bytes past the first must not read garbage). */
    for (unsigned i = 0; i < size; i++) {
        unsigned off = (unsigned)(port - HVPROF_PORT_UART) + i;
        if (off > 7) {
            if (!is_write)
                data[i] = 0xff;
            continue;
        }
        if (is_write)
            uart_write(&d->uart, off, data[i]);
        else
            data[i] = uart_read(&d->uart, off);
    }
    pthread_mutex_unlock(&d->lock);
}

static void kbd_reset(void *ctx)
{
    vm_request_stop(ctx, VM_STOP_RESET, 0, -1, "guest reset through the i8042 (0xfe to port 0x64)");
}

static void kbd_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    struct vm_devices *d = ctx;
    pthread_mutex_lock(&d->lock);
    if (is_write)
        i8042_write(&d->kbd, port, data[0]);
    else
        data[0] = i8042_read(&d->kbd, port);
    pthread_mutex_unlock(&d->lock);
    if (!is_write)
        memset(data + 1, 0, size - 1);
}

static void debug_exit_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    if (!is_write) {
        memset(data, 0, size);
        return;
    }
    /* The ABI is a 32-bit OUT; narrower writes still carry the status in their low byte. */
    vm_request_stop(ctx, VM_STOP_EXIT, data[0], -1, "guest wrote the debug-exit port");
}

static void rtc_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    struct vm_devices *d = ctx;
    time_t now = time(NULL);
    pthread_mutex_lock(&d->lock);
    if (is_write)
        rtc_write(&d->rtc, port, data[0], now);
    else
        data[0] = rtc_read(&d->rtc, port, now);
    pthread_mutex_unlock(&d->lock);
    if (!is_write)
        memset(data + 1, 0, size - 1);
}

static void fixed_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    (void)ctx;
    if (is_write)
        return;
    memset(data, 0, size);
    if (port == 0x92)
        data[0] = 0x02; /* fast A20 gate: A20 enabled, no reset */
}

static void acpi_poweroff(void *ctx)
{
    vm_request_stop(ctx, VM_STOP_POWEROFF, 0, -1, "guest powered off (ACPI S5)");
}

static void acpi_pm_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    struct vm_devices *d = ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    pthread_mutex_lock(&d->lock);
    if (is_write)
        acpi_pm_write(&d->pm, port, data, size);
    else
        acpi_pm_read(&d->pm, port, data, size, now);
    pthread_mutex_unlock(&d->lock);
}

/* PCI configuration mechanism 1 (PCI Local Bus spec 3.0, 3.2.2.3.2) with an empty bus: the
 * address register reads back, every data read is all-ones = "no device". */
static void pci_port(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    struct vm_devices *d = ctx;
    if (port == 0xcf8 && size == 4) {
        pthread_mutex_lock(&d->lock);
        if (is_write)
            memcpy(&d->pci_addr, data, 4);
        else
            memcpy(data, &d->pci_addr, 4);
        pthread_mutex_unlock(&d->lock);
        return;
    }
    if (!is_write)
        memset(data, 0xff, size);
}

int vm_devices_init(struct vm_devices *d, struct vm *vm, int console_fd, uint64_t console_max,
                    struct hv_err *err)
{
    d->vm = vm;
    iobus_init(&d->bus);
    pthread_mutex_init(&d->lock, NULL);
    console_init(&d->console, console_fd, console_max);
    uart_init(&d->uart, uart_irq, uart_tx, vm);
    i8042_init(&d->kbd, kbd_reset, vm);
    rtc_init(&d->rtc);
    acpi_pm_init(&d->pm, acpi_poweroff, vm);
    struct iobus *b = &d->bus;
    if (iobus_register(b, HVPROF_PORT_UART, 8, "serial", uart_port, d, err) < 0 ||
        iobus_register(b, I8042_DATA_PORT, 1, "i8042", kbd_port, d, err) < 0 ||
        iobus_register(b, I8042_CMD_PORT, 1, "i8042", kbd_port, d, err) < 0 ||
        iobus_register(b, HVPROF_PORT_DEBUG_EXIT, 1, "debug-exit", debug_exit_port, vm, err) < 0 ||
        iobus_register(b, RTC_INDEX_PORT, 2, "rtc", rtc_port, d, err) < 0 ||
        iobus_register(b, 0x80, 1, "post", fixed_port, d, err) < 0 ||
        iobus_register(b, 0x92, 1, "port92", fixed_port, d, err) < 0 ||
        iobus_register(b, ACPI_PM1A_EVT_PORT, ACPI_PM_PORTS, "acpi-pm", acpi_pm_port, d, err) < 0 ||
        iobus_register(b, 0xcf8, 8, "pci-config", pci_port, d, err) < 0)
        return hv_err_prefix(err, "devices");
    return 0;
}

void vm_devices_flush(struct vm_devices *d)
{
    pthread_mutex_lock(&d->lock);
    console_flush(&d->console);
    pthread_mutex_unlock(&d->lock);
}

void vm_devices_destroy(struct vm_devices *d)
{
    vm_devices_flush(d);
    pthread_mutex_destroy(&d->lock);
}
