#include "vmm/console.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

void console_init(struct console *c, int fd, uint64_t max)
{
    c->fd = fd;
    c->len = 0;
    c->max = max ? max : CONSOLE_MAX_DEFAULT;
    c->written = c->cut = 0;
}

static void write_all(int fd, const uint8_t *p, size_t len)
{
    size_t off = 0;
    while (fd >= 0 && off < len) {
        ssize_t n = write(fd, p + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* a closed pipe or full disk loses console output, not the VM */
        off += (size_t)n;
    }
}

void console_flush(struct console *c)
{
    write_all(c->fd, c->buf, c->len);
    c->written += c->len;
    c->len = 0;
}

void console_putc(struct console *c, uint8_t byte)
{
    if (c->fd < 0)
        return;
    if (c->written + c->len >= c->max) {
        if (c->cut++ == 0) {
            console_flush(c);
            char note[160];
            int n = snprintf(note, sizeof(note),
                             "\n[hvprof: the guest's console output is cut here, after %" PRIu64
                             " bytes (--console-max); the rest is not written]\n",
                             c->written);
            if (n > 0)
                write_all(c->fd, (const uint8_t *)note, (size_t)n);
        }
        return;
    }
    c->buf[c->len++] = byte;
    if (byte == '\n' || c->len == CONSOLE_BUF)
        console_flush(c);
}
