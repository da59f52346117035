#include "vmm/i8042.h"

#include <string.h>

void i8042_init(struct i8042 *k, void (*reset)(void *), void *ctx)
{
    memset(k, 0, sizeof(*k));
    k->ctr = 0x45; /* translate, system flag, keyboard interrupt enabled: the PC/AT default */
    k->reset = reset;
    k->ctx = ctx;
}

static void put_out(struct i8042 *k, uint8_t v)
{
    k->out = v;
    k->out_full = true;
}

uint8_t i8042_read(struct i8042 *k, uint16_t port)
{
    if (port == I8042_CMD_PORT)
        return I8042_STR_SYS | I8042_STR_KEYLOCK | (k->out_full ? I8042_STR_OBF : 0);
    if (port == I8042_DATA_PORT) {
        uint8_t v = k->out_full ? k->out : 0;
        k->out_full = false;
        return v;
    }
    return 0xff;
}

static void do_reset(struct i8042 *k)
{
    if (k->reset)
        k->reset(k->ctx);
}

void i8042_write(struct i8042 *k, uint16_t port, uint8_t value)
{
    if (port == I8042_DATA_PORT) {
        uint8_t cmd = k->pending;
        k->pending = 0;
        if (cmd == I8042_CMD_WRITE_CTR)
            k->ctr = value;
        else if (cmd == I8042_CMD_WRITE_OUT && !(value & 0x01))
            do_reset(k); /* output port bit 0 low = CPU reset line asserted */
        return;          /* bytes for a keyboard that does not exist are dropped */
    }
    if (port != I8042_CMD_PORT)
        return;
    switch (value) {
    case I8042_CMD_READ_CTR:
        put_out(k, k->ctr);
        break;
    case I8042_CMD_WRITE_CTR:
    case I8042_CMD_WRITE_OUT:
        k->pending = value;
        break;
    case I8042_CMD_SELF_TEST:
        put_out(k, 0x55); /* "test passed" */
        break;
    case I8042_CMD_TEST_KBD:
    case I8042_CMD_TEST_AUX:
        put_out(k, 0x00); /* "no error" */
        break;
    case I8042_CMD_RESET_CPU:
        do_reset(k);
        break;
    default:
        break;
    }
}
