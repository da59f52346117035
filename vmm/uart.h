/* 16550A UART model (COM1 at 0x3f8, IRQ 4). Pure state machine: the caller serialises access
 * and supplies the IRQ line and the transmit sink. Register file and interrupt rules follow
 * docs/sources.md §2 (the 8250/16550 data sheet as Linux's 8250 driver uses it). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UART_RX_FIFO 64 /* Linux's autoconfig expects a 16550A with a 16..64-byte FIFO */

/* Register offsets */
#define UART_RBR 0 /* read: receive buffer; write: THR (DLAB=0) / DLL (DLAB=1) */
#define UART_IER 1 /* DLAB=1: DLM */
#define UART_IIR 2 /* write: FCR */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_LCR_DLAB   0x80
#define UART_IER_RDI    0x01
#define UART_IER_THRI   0x02
#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRI   0x02
#define UART_IIR_RDI    0x04
#define UART_IIR_FIFO   0xc0 /* "FIFOs enabled": bits 7:6 = 11 identify a 16550A */
#define UART_LSR_DR     0x01
#define UART_LSR_THRE   0x20
#define UART_LSR_TEMT   0x40
#define UART_MSR_IDLE   0xb0 /* DCD | DSR | CTS */
#define UART_MCR_OUT2   0x08

struct uart16550 {
    uint8_t ier, lcr, mcr, lsr, msr, scr, fcr, dll, dlm;
    bool thri_pending; /* THR became empty and the guest has not yet seen it through IIR */
    bool irq_level;    /* what we last drove on the IRQ line */
    uint8_t rx[UART_RX_FIFO];
    unsigned rx_head, rx_count;

    void (*set_irq)(void *ctx, int level);
    void (*tx)(void *ctx, uint8_t byte);
    void *ctx;
};

void uart_init(struct uart16550 *u, void (*set_irq)(void *, int), void (*tx)(void *, uint8_t),
               void *ctx);
uint8_t uart_read(struct uart16550 *u, unsigned offset);
void uart_write(struct uart16550 *u, unsigned offset, uint8_t value);
/* Queue received bytes (host -> guest). Returns how many fit in the FIFO. */
size_t uart_receive(struct uart16550 *u, const uint8_t *buf, size_t n);
/* Current IIR value without side effects (for tests and dumps). */
uint8_t uart_iir(const struct uart16550 *u);
