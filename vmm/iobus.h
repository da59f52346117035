/* A port-I/O bus: fixed table of port ranges -> handler. Registered before the vCPUs run and
 * read-only afterwards, so dispatch needs no lock (handlers lock their own device state). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define IOBUS_MAX_RANGES 32

/* One access of `size` (1, 2 or 4) bytes at `port`. For reads the handler fills data[0..size). */
typedef void (*iobus_fn)(void *ctx, uint16_t port, bool is_write, uint8_t *data, unsigned size);

struct iobus_range {
    uint16_t base;
    uint16_t len;
    const char *name; /* the device, as exit profiles name it (docs/exits.md) */
    iobus_fn fn;
    void *ctx;
};

struct iobus {
    struct iobus_range range[IOBUS_MAX_RANGES];
    unsigned n;
};

void iobus_init(struct iobus *bus);

/* Claim [base, base+len). Fails on overlap, wrap past 0xffff or a full table. */
int iobus_register(struct iobus *bus, uint16_t base, uint16_t len, const char *name, iobus_fn fn,
                   void *ctx, struct hv_err *err);
/* The range holding `port`, or -1. */
int iobus_find(const struct iobus *bus, uint16_t port);

/* Route one access. An IN from an unclaimed port reads all-ones (a floating ISA bus), never
 * stale kvm_run bytes; an OUT to one is dropped. Returns true if a handler claimed the port. */
bool iobus_dispatch(const struct iobus *bus, uint16_t port, bool is_write, uint8_t *data,
                    unsigned size);
