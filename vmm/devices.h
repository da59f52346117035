/* The legacy devices every hvprof VM has, wired onto one port bus:
 *   0x3f8-0x3ff  16550A UART (COM1), IRQ 4 through KVM_IRQ_LINE, output to the console fd
 *   0x60, 0x64   i8042 (0xFE to 0x64 = reset = the VM stops)
 *   0xf4         debug exit (HVPROF_PORT_DEBUG_EXIT): the VM stops with status = value & 0xff
 *   0x70-0x71    MC146818 RTC with the host's time, and CMOS RAM (vmm/rtc.h)
 *   0x80         POST code (dropped), 0x92 fast A20 (reads 0x02: A20 on)
 *   0x600-0x60b  ACPI PM1a event/control blocks and PM timer (vmm/acpi_pm.h): S5 = power off
 *   0xcf8-0xcff  PCI configuration mechanism 1 with no devices (data reads all-ones)
 * PIC, PIT and port 0x61 are in the kernel (KVM_CREATE_IRQCHIP, KVM_CREATE_PIT2 with
 * KVM_PIT_SPEAKER_DUMMY). */
#pragma once

#include <pthread.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/acpi_pm.h"
#include "vmm/console.h"
#include "vmm/i8042.h"
#include "vmm/iobus.h"
#include "vmm/rtc.h"
#include "vmm/uart.h"

#define VM_UART_IRQ 4 /* COM1's ISA IRQ = GSI 4 with the default KVM routing */

struct vm;

struct vm_devices {
    struct iobus bus;
    pthread_mutex_t lock; /* device state is shared by every vCPU thread */
    struct vm *vm;
    struct uart16550 uart;
    struct console console;
    struct i8042 kbd;
    struct rtc rtc;
    struct acpi_pm pm;
    uint32_t pci_addr;
};

int vm_devices_init(struct vm_devices *d, struct vm *vm, int console_fd, uint64_t console_max,
                    struct hv_err *err);
void vm_devices_flush(struct vm_devices *d);
void vm_devices_destroy(struct vm_devices *d);
