#include "vmm/iobus.h"

#include <string.h>

void iobus_init(struct iobus *bus)
{
    memset(bus, 0, sizeof(*bus));
}

int iobus_register(struct iobus *bus, uint16_t base, uint16_t len, const char *name, iobus_fn fn,
                   void *ctx, struct hv_err *err)
{
    if (len == 0 || !fn)
        return hv_errf(err, "iobus: empty range or no handler at port 0x%x", base);
    if ((uint32_t)base + len > 0x10000)
        return hv_errf(err, "iobus: range 0x%x+%u runs past port 0xffff", base, len);
    if (bus->n == IOBUS_MAX_RANGES)
        return hv_errk(err, HV_ERR_LIMIT, "iobus: too many port ranges (max %d)", IOBUS_MAX_RANGES);
    for (unsigned i = 0; i < bus->n; i++) {
        const struct iobus_range *r = &bus->range[i];
        if (base < (uint32_t)r->base + r->len && r->base < (uint32_t)base + len)
            return hv_errf(err, "iobus: ports 0x%x+%u overlap 0x%x+%u", base, len, r->base, r->len);
    }
    bus->range[bus->n++] = (struct iobus_range){
        .base = base, .len = len, .name = name ? name : "port", .fn = fn, .ctx = ctx};
    return 0;
}

bool iobus_dispatch(const struct iobus *bus, uint16_t port, bool is_write, uint8_t *data,
                    unsigned size)
{
    for (unsigned i = 0; i < bus->n; i++) {
        const struct iobus_range *r = &bus->range[i];
        if (port >= r->base && port - r->base < r->len) {
            r->fn(r->ctx, port, is_write, data, size);
            return true;
        }
    }
    if (!is_write)
        memset(data, 0xff, size);
    return false;
}

int iobus_find(const struct iobus *bus, uint16_t port)
{
    for (unsigned i = 0; i < bus->n; i++)
        if (port >= bus->range[i].base && port - bus->range[i].base < bus->range[i].len)
            return (int)i;
    return -1;
}
