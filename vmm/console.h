/* Console sink for the UART: bytes are buffered and written to an fd on newline, when the buffer
 * fills, and on console_flush() (the VM calls it when it stops). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define CONSOLE_BUF 4096

struct console {
    int fd; /* -1: discard */
    size_t len;
    uint8_t buf[CONSOLE_BUF];
};

void console_init(struct console *c, int fd);
void console_putc(struct console *c, uint8_t byte);
void console_flush(struct console *c);
