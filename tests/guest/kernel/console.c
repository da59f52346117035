/* Console on COM1 (16550A, polled) and the debug-exit port that ends the VM with a status
 * (vmm/boot/hvprof_boot.h). Every port access is a VM exit, so instead of polling LSR before each
 * byte we wait for LSR.THRE (bit 5: transmit FIFO empty) once and then write up to 16 bytes,
 * the 16550A's transmit FIFO depth. */
#include "kernel.h"

#define UART_LSR 5
#define LSR_THRE 0x20

#define UART_FIFO 16

static spinlock_t console_lock;
static int fifo_room; /* bytes we may write before polling LSR again (console_lock held) */

static void uart_putc(char c)
{
    if (fifo_room == 0) {
        for (int i = 0; i < 100000 && !(inb(HVPROF_PORT_UART + UART_LSR) & LSR_THRE); i++)
            ;
        fifo_room = UART_FIFO;
    }
    fifo_room--;
    outb(HVPROF_PORT_UART, (u8)c);
}

void console_write(const char *s, size_t n)
{
    spin_lock(&console_lock);
    for (size_t i = 0; i < n; i++)
        uart_putc(s[i]);
    spin_unlock(&console_lock);
}

void kprintf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(buf) - 1)
        n = sizeof(buf) - 1;
    console_write(buf, (size_t)n);
}

_Noreturn void guest_exit(u32 status)
{
    outl(HVPROF_PORT_DEBUG_EXIT, status);
    for (;;)
        __asm__ volatile("cli; hlt");
}

_Noreturn void panic(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(buf) - 1)
        n = sizeof(buf) - 1;
    /* No lock: the console may be held by the CPU that panicked. */
    fifo_room = 0;
    static const char pfx[] = "hvprof-guest: PANIC: ";
    for (size_t i = 0; i < sizeof(pfx) - 1; i++)
        uart_putc(pfx[i]);
    for (int i = 0; i < n; i++)
        uart_putc(buf[i]);
    uart_putc('\n');
    guest_exit(0x7f);
}
