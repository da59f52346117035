#include "vmm/uart.h"

#include <string.h>

void uart_init(struct uart16550 *u, void (*set_irq)(void *, int), void (*tx)(void *, uint8_t),
               void *ctx)
{
    memset(u, 0, sizeof(*u));
    /* Reset values: transmitter idle (LSR 0x60, which Linux's console busy-polls for), modem
     * lines up, OUT2 set so the PC's IRQ gate is open. */
    u->lsr = UART_LSR_THRE | UART_LSR_TEMT;
    u->msr = UART_MSR_IDLE;
    u->mcr = UART_MCR_OUT2;
    u->set_irq = set_irq;
    u->tx = tx;
    u->ctx = ctx;
}

uint8_t uart_iir(const struct uart16550 *u)
{
    /* Priority: received data over THR empty (16550 data sheet, IIR table). */
    if ((u->ier & UART_IER_RDI) && (u->lsr & UART_LSR_DR))
        return UART_IIR_RDI | UART_IIR_FIFO;
    if ((u->ier & UART_IER_THRI) && u->thri_pending)
        return UART_IIR_THRI | UART_IIR_FIFO;
    return UART_IIR_NO_INT | UART_IIR_FIFO;
}

/* IRQ 4 is edge-triggered at the PIC/IOAPIC: drive the line from "an interrupt is pending" and
 * let it fall when nothing is, so the next condition makes a fresh 0->1 edge (docs/sources.md §2).
 */
static void update_irq(struct uart16550 *u)
{
    bool level = !(uart_iir(u) & UART_IIR_NO_INT);
    if (level != u->irq_level) {
        u->irq_level = level;
        if (u->set_irq)
            u->set_irq(u->ctx, level);
    }
}

uint8_t uart_read(struct uart16550 *u, unsigned offset)
{
    bool dlab = u->lcr & UART_LCR_DLAB;
    uint8_t v = 0;
    switch (offset & 7) {
    case UART_RBR:
        if (dlab)
            return u->dll;
        if (u->rx_count) {
            v = u->rx[u->rx_head];
            u->rx_head = (u->rx_head + 1) % UART_RX_FIFO;
            u->rx_count--;
        }
        if (!u->rx_count)
            u->lsr &= (uint8_t)~UART_LSR_DR;
        update_irq(u);
        return v;
    case UART_IER:
        return dlab ? u->dlm : u->ier;
    case UART_IIR:
        v = uart_iir(u);
        /* Reading IIR while it reports THRI acknowledges that interrupt. */
        if ((v & 0x0f) == UART_IIR_THRI) {
            u->thri_pending = false;
            update_irq(u);
        }
        return v;
    case UART_LCR:
        return u->lcr;
    case UART_MCR:
        return u->mcr;
    case UART_LSR:
        return u->lsr;
    case UART_MSR:
        return u->msr;
    default:
        return u->scr;
    }
}

void uart_write(struct uart16550 *u, unsigned offset, uint8_t value)
{
    bool dlab = u->lcr & UART_LCR_DLAB;
    switch (offset & 7) {
    case UART_RBR:
        if (dlab) {
            u->dll = value;
            return;
        }
        /* Writing THR acknowledges THRI; the byte leaves at once, so THR is empty again and a
         * new THRI condition arises. Drop the line in between to make a fresh edge. */
        u->thri_pending = false;
        update_irq(u);
        if (u->tx)
            u->tx(u->ctx, value);
        u->lsr |= UART_LSR_THRE | UART_LSR_TEMT;
        u->thri_pending = true;
        update_irq(u);
        return;
    case UART_IER:
        if (dlab) {
            u->dlm = value;
            return;
        }
        /* Only the low nibble exists (Linux's autoconfig reads it back); enabling THRI while THR
         * is empty raises it again — the 8250 console masks IER around each message and relies
         * on that (docs/sources.md §2). */
        if ((value & UART_IER_THRI) && (u->lsr & UART_LSR_THRE))
            u->thri_pending = true;
        u->ier = value & 0x0f;
        update_irq(u);
        return;
    case UART_IIR:
        u->fcr = value;
        if (value & 0x02) { /* FCR: clear receive FIFO */
            u->rx_count = 0;
            u->rx_head = 0;
            u->lsr &= (uint8_t)~UART_LSR_DR;
            update_irq(u);
        }
        return;
    case UART_LCR:
        u->lcr = value;
        return;
    case UART_MCR:
        u->mcr = value & 0x1f;
        return;
    case UART_LSR:
    case UART_MSR:
        return; /* read-only (LSR writes are a factory test) */
    default:
        u->scr = value;
        return;
    }
}

size_t uart_receive(struct uart16550 *u, const uint8_t *buf, size_t n)
{
    size_t done = 0;
    while (done < n && u->rx_count < UART_RX_FIFO) {
        u->rx[(u->rx_head + u->rx_count) % UART_RX_FIFO] = buf[done++];
        u->rx_count++;
    }
    if (u->rx_count)
        u->lsr |= UART_LSR_DR;
    update_irq(u);
    return done;
}
