/* Bounded writes into guest RAM for the loaders: a range must lie inside one gmem slot. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

/* Copy `len` bytes to guest-physical `gpa`. Fails with "WHAT [a, b) is not in guest RAM". */
int guest_write(struct gmem *mem, uint64_t gpa, const void *src, size_t len, const char *what,
                struct hv_err *err);

/* Zero `len` bytes at `gpa`; same rule. */
int guest_zero(struct gmem *mem, uint64_t gpa, uint64_t len, const char *what, struct hv_err *err);
