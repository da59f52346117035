/* Console sink for the UART: bytes are buffered and written to an fd on newline, when the buffer
 * fills, and on console_flush() (the VM calls it when it stops). A guest may print without end:
 * after `max` bytes a note says where the output was cut and the rest is only counted. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define CONSOLE_BUF         4096
#define CONSOLE_MAX_DEFAULT (64ull << 20) /* `--console-max`: a Linux boot prints ~100 KiB */

struct console {
    int fd; /* -1: discard */
    size_t len;
    uint64_t max;     /* bytes written at most (0: CONSOLE_MAX_DEFAULT) */
    uint64_t written; /* bytes given to the fd (up to max) */
    uint64_t cut;     /* bytes the guest printed past max: counted, not written */
    uint8_t buf[CONSOLE_BUF];
};

void console_init(struct console *c, int fd, uint64_t max);
void console_putc(struct console *c, uint8_t byte);
void console_flush(struct console *c);
