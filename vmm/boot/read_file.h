/* Reading a kernel or initrd file whole, bounded. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Read all of `path` into a malloc'd buffer (*data, *size; free() it). Fails with
 * "PATH: strerror" on open/read errors and "PATH: larger than N MiB" past `max` bytes. */
int boot_read_file(const char *path, size_t max, uint8_t **data, size_t *size, struct hv_err *err);
