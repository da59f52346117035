#include "vmm/console.h"

#include <errno.h>
#include <unistd.h>

void console_init(struct console *c, int fd)
{
    c->fd = fd;
    c->len = 0;
}

void console_flush(struct console *c)
{
    size_t off = 0;
    while (c->fd >= 0 && off < c->len) {
        ssize_t n = write(c->fd, c->buf + off, c->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* a closed pipe or full disk loses console output, not the VM */
        off += (size_t)n;
    }
    c->len = 0;
}

void console_putc(struct console *c, uint8_t byte)
{
    if (c->fd < 0)
        return;
    c->buf[c->len++] = byte;
    if (byte == '\n' || c->len == CONSOLE_BUF)
        console_flush(c);
}
