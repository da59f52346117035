/* Unit tests of the device models driven directly: 16550A registers and IRQ line (with a fake
 * irq callback that records every level change), i8042, iobus dispatch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/i8042.h"
#include "vmm/iobus.h"
#include "vmm/uart.h"

struct fake {
    int levels[64];
    unsigned nlevels;
    char out[64];
    unsigned nout;
    int resets;
};

static void fake_irq(void *ctx, int level)
{
    struct fake *f = ctx;
    if (f->nlevels < 64)
        f->levels[f->nlevels++] = level;
}

static void fake_tx(void *ctx, uint8_t b)
{
    struct fake *f = ctx;
    if (f->nout < 63)
        f->out[f->nout++] = (char)b;
}

static void test_uart_reset_state(void **state)
{
    (void)state;
    struct fake f = {0};
    struct uart16550 u;
    uart_init(&u, fake_irq, fake_tx, &f);
    assert_int_equal(uart_read(&u, UART_LSR), 0x60); /* idle: THRE | TEMT */
    assert_int_equal(uart_read(&u, UART_IIR), 0xc1); /* no interrupt, FIFOs enabled */
    assert_int_equal(uart_read(&u, UART_IER), 0);
    assert_int_equal(uart_read(&u, UART_MSR), 0xb0);
    assert_int_equal(f.nlevels, 0);
}

static void test_uart_ier_low_nibble(void **state)
{
    (void)state;
    struct fake f = {0};
    struct uart16550 u;
    uart_init(&u, fake_irq, fake_tx, &f);
    /* Linux autoconfig: IER=0 reads back 0, IER=0x0f reads back 0x0f, high bits dropped. */
    uart_write(&u, UART_IER, 0);
    assert_int_equal(uart_read(&u, UART_IER) & 0x0f, 0);
    uart_write(&u, UART_IER, 0xff);
    assert_int_equal(uart_read(&u, UART_IER), 0x0f);
}

static void test_uart_tx_and_dlab(void **state)
{
    (void)state;
    struct fake f = {0};
    struct uart16550 u;
    uart_init(&u, fake_irq, fake_tx, &f);
    uart_write(&u, UART_LCR, 0x83); /* DLAB + 8N1 */
    uart_write(&u, UART_RBR, 0x01); /* divisor, not data */
    uart_write(&u, UART_IER, 0x00);
    assert_int_equal(uart_read(&u, UART_RBR), 0x01);
    assert_int_equal(f.nout, 0);
    uart_write(&u, UART_LCR, 0x03);
    uart_write(&u, UART_RBR, 'o');
    uart_write(&u, UART_RBR, 'k');
    assert_int_equal(f.nout, 2);
    assert_memory_equal(f.out, "ok", 2);
    assert_int_equal(uart_read(&u, UART_LSR), 0x60);
    assert_int_equal(f.nlevels, 0); /* IER = 0: never an interrupt */
}

static void test_uart_thri_edges(void **state)
{
    (void)state;
    struct fake f = {0};
    struct uart16550 u;
    uart_init(&u, fake_irq, fake_tx, &f);
    /* Enabling THRI while THR is empty raises the line at once. */
    uart_write(&u, UART_IER, UART_IER_THRI);
    assert_int_equal(f.nlevels, 1);
    assert_int_equal(f.levels[0], 1);
    /* Reading IIR reports THRI and acknowledges it: the line drops. */
    assert_int_equal(uart_read(&u, UART_IIR), 0xc2);
    assert_int_equal(f.levels[f.nlevels - 1], 0);
    assert_int_equal(uart_read(&u, UART_IIR), 0xc1);
    /* A byte written: THR empties again and a fresh 0->1 edge follows. */
    unsigned before = f.nlevels;
    uart_write(&u, UART_RBR, 'x');
    assert_int_equal(f.nlevels, before + 1);
    assert_int_equal(f.levels[f.nlevels - 1], 1);
    /* Writing while the line is high makes it drop and rise again (an edge per byte). */
    before = f.nlevels;
    uart_write(&u, UART_RBR, 'y');
    assert_int_equal(f.nlevels, before + 2);
    assert_int_equal(f.levels[before], 0);
    assert_int_equal(f.levels[before + 1], 1);
    /* Masking IER drops it; unmasking re-asserts (the 8250 console relies on it). */
    uart_write(&u, UART_IER, 0);
    assert_int_equal(f.levels[f.nlevels - 1], 0);
    uart_write(&u, UART_IER, UART_IER_THRI);
    assert_int_equal(f.levels[f.nlevels - 1], 1);
}

static void test_uart_rx_priority(void **state)
{
    (void)state;
    struct fake f = {0};
    struct uart16550 u;
    uart_init(&u, fake_irq, fake_tx, &f);
    uart_write(&u, UART_IER, UART_IER_RDI | UART_IER_THRI);
    const uint8_t in[] = {'a', 'b'};
    assert_int_equal(uart_receive(&u, in, 2), 2);
    assert_int_equal(uart_read(&u, UART_LSR) & UART_LSR_DR, UART_LSR_DR);
    assert_int_equal(uart_read(&u, UART_IIR), 0xc4); /* RX data outranks THRE */
    assert_int_equal(uart_read(&u, UART_RBR), 'a');
    assert_int_equal(uart_read(&u, UART_RBR), 'b');
    assert_int_equal(uart_read(&u, UART_LSR) & UART_LSR_DR, 0);
    assert_int_equal(uart_read(&u, UART_IIR), 0xc2); /* now the pending THRE */
    assert_int_equal(uart_read(&u, UART_IIR), 0xc1);
    assert_int_equal(f.levels[f.nlevels - 1], 0);
    assert_int_equal(uart_read(&u, UART_RBR), 0); /* empty FIFO reads 0 */
}

static void test_uart_rx_fifo_bound(void **state)
{
    (void)state;
    struct fake f = {0};
    struct uart16550 u;
    uart_init(&u, fake_irq, fake_tx, &f);
    uint8_t big[100];
    memset(big, 'z', sizeof(big));
    assert_int_equal(uart_receive(&u, big, sizeof(big)), UART_RX_FIFO);
    uart_write(&u, UART_IIR, 0x02); /* FCR: clear receive FIFO */
    assert_int_equal(uart_read(&u, UART_LSR) & UART_LSR_DR, 0);
}

static void fake_reset(void *ctx)
{
    ((struct fake *)ctx)->resets++;
}

static void test_i8042(void **state)
{
    (void)state;
    struct fake f = {0};
    struct i8042 k;
    i8042_init(&k, fake_reset, &f);
    assert_int_equal(i8042_read(&k, 0x64) & I8042_STR_OBF, 0);
    i8042_write(&k, 0x64, I8042_CMD_SELF_TEST);
    assert_int_equal(i8042_read(&k, 0x64) & I8042_STR_OBF, I8042_STR_OBF);
    assert_int_equal(i8042_read(&k, 0x60), 0x55);
    assert_int_equal(i8042_read(&k, 0x64) & I8042_STR_OBF, 0);
    i8042_write(&k, 0x64, I8042_CMD_WRITE_CTR);
    i8042_write(&k, 0x60, 0x21);
    i8042_write(&k, 0x64, I8042_CMD_READ_CTR);
    assert_int_equal(i8042_read(&k, 0x60), 0x21);
    assert_int_equal(f.resets, 0);
    i8042_write(&k, 0x64, I8042_CMD_RESET_CPU);
    assert_int_equal(f.resets, 1);
    i8042_write(&k, 0x64, I8042_CMD_WRITE_OUT);
    i8042_write(&k, 0x60, 0xfe); /* reset line (bit 0) low */
    assert_int_equal(f.resets, 2);
}

struct bus_log {
    uint16_t port;
    bool write;
    unsigned size;
    int calls;
};

static void bus_handler(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size)
{
    struct bus_log *l = ctx;
    l->port = port;
    l->write = is_write;
    l->size = size;
    l->calls++;
    if (!is_write)
        memset(data, 0x5a, size);
}

static void test_iobus(void **state)
{
    (void)state;
    struct iobus bus;
    struct hv_err err = {0};
    struct bus_log a = {0}, b = {0};
    iobus_init(&bus);
    assert_int_equal(iobus_register(&bus, 0x3f8, 8, "t", bus_handler, &a, &err), 0);
    assert_int_equal(iobus_register(&bus, 0x60, 1, "t", bus_handler, &b, &err), 0);
    assert_int_equal(iobus_register(&bus, 0x3fc, 2, "t", bus_handler, &b, &err), -1);
    assert_non_null(strstr(err.msg, "overlap"));
    assert_int_equal(iobus_register(&bus, 0xfffe, 4, "t", bus_handler, &b, &err), -1);
    assert_int_equal(iobus_register(&bus, 0x10, 0, "t", bus_handler, &b, &err), -1);

    uint8_t d[4] = {1, 2, 3, 4};
    assert_true(iobus_dispatch(&bus, 0x3ff, true, d, 1));
    assert_int_equal(a.port, 0x3ff);
    assert_true(a.write);
    assert_int_equal(b.calls, 0);
    assert_true(iobus_dispatch(&bus, 0x60, false, d, 2));
    assert_int_equal(d[0], 0x5a);
    assert_int_equal(b.calls, 1);
    /* Unclaimed reads are all-ones, never stale data. */
    memset(d, 0x33, sizeof(d));
    assert_false(iobus_dispatch(&bus, 0x400, false, d, 4));
    assert_int_equal(d[0] & d[1] & d[2] & d[3], 0xff);
    assert_false(iobus_dispatch(&bus, 0x3f7, true, d, 1));
    assert_int_equal(a.calls, 1);
}

static void test_iobus_full(void **state)
{
    (void)state;
    struct iobus bus;
    struct hv_err err = {0};
    struct bus_log a = {0};
    iobus_init(&bus);
    for (unsigned i = 0; i < IOBUS_MAX_RANGES; i++)
        assert_int_equal(iobus_register(&bus, (uint16_t)(i * 4), 4, "t", bus_handler, &a, &err), 0);
    assert_int_equal(iobus_register(&bus, 0x1000, 1, "t", bus_handler, &a, &err), -1);
    assert_non_null(strstr(err.msg, "too many"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uart_reset_state),
        cmocka_unit_test(test_uart_ier_low_nibble),
        cmocka_unit_test(test_uart_tx_and_dlab),
        cmocka_unit_test(test_uart_thri_edges),
        cmocka_unit_test(test_uart_rx_priority),
        cmocka_unit_test(test_uart_rx_fifo_bound),
        cmocka_unit_test(test_i8042),
        cmocka_unit_test(test_iobus),
        cmocka_unit_test(test_iobus_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
