/* Strict option-value parsers shared by every hvprof command. Each accepts the whole string or
 * fails with one line naming the option (`what`, e.g. "--mem") and showing valid examples. No
 * leading/trailing blanks, no sign, no hex; all arithmetic is overflow-checked. */
#pragma once

#include <stdint.h>

#include "common/err.h"

/* Unsigned integer in [min, max]: "0", "4096". */
int parse_uint(const char *s, const char *what, uint64_t min, uint64_t max, uint64_t *out,
               struct hv_err *err);

/* Size in bytes in [min, max]: "4096", "64K", "256M", "1G", "1.5G", "2T"; suffixes are binary
 * (K = 1024) and case-insensitive, optionally followed by "B" or "iB" ("256MiB"). The value must
 * be a whole number of bytes. */
int parse_size(const char *s, const char *what, uint64_t min, uint64_t max, uint64_t *out,
               struct hv_err *err);

/* Frequency in Hz in [min, max]: "1000", "100Hz", "4k", "4kHz", "2.5kHz", "1MHz" (decimal
 * multipliers, case-insensitive). The value must be a whole number of Hz. */
int parse_freq_hz(const char *s, const char *what, uint64_t min, uint64_t max, uint64_t *out,
                  struct hv_err *err);

/* Duration in nanoseconds in [min_ns, max_ns]: "2" (seconds), "1.5s", "500ms", "20us", "100ns",
 * "2m" / "2min" (minutes), "1h". The value must be a whole number of nanoseconds. */
int parse_duration_ns(const char *s, const char *what, uint64_t min_ns, uint64_t max_ns,
                      uint64_t *out, struct hv_err *err);

/* "256M", "1G", "4096" for messages: the shortest exact binary-suffix form. */
void parse_format_size(uint64_t bytes, char *buf, unsigned len);
