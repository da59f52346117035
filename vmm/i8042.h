/* Minimal i8042 keyboard controller at ports 0x60 (data) / 0x64 (status/command): enough for
 * Linux's probe to see a sane controller and for `reboot=k` (command 0xFE, pulse the CPU reset
 * line) to stop the VM. No keyboard, no IRQ 1/12. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define I8042_DATA_PORT 0x60
#define I8042_CMD_PORT  0x64

#define I8042_STR_OBF     0x01 /* output buffer full: a byte waits at 0x60 */
#define I8042_STR_SYS     0x04 /* system flag: self-test passed */
#define I8042_STR_KEYLOCK 0x10 /* set = keyboard not inhibited (Linux warns "Keylock active") */

#define I8042_CMD_READ_CTR  0x20
#define I8042_CMD_WRITE_CTR 0x60
#define I8042_CMD_TEST_AUX  0xa9
#define I8042_CMD_SELF_TEST 0xaa
#define I8042_CMD_TEST_KBD  0xab
#define I8042_CMD_WRITE_OUT 0xd1
#define I8042_CMD_RESET_CPU 0xfe

struct i8042 {
    uint8_t ctr; /* controller configuration byte */
    uint8_t out; /* byte waiting at port 0x60 */
    bool out_full;
    uint8_t pending;          /* command waiting for its data byte at 0x60, 0 if none */
    void (*reset)(void *ctx); /* CPU reset requested */
    void *ctx;
};

void i8042_init(struct i8042 *k, void (*reset)(void *), void *ctx);
uint8_t i8042_read(struct i8042 *k, uint16_t port);
void i8042_write(struct i8042 *k, uint16_t port, uint8_t value);
