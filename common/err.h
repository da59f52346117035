/* Errors as values: a function that can fail takes a `struct hv_err *` and returns -1 (or NULL)
 * after filling in one human-readable line. Callers add context with hv_err_prefix(); the CLI
 * prints the final line once. Nothing below the CLI calls exit(). */
#pragma once

#include <stdarg.h>

#define HV_ERR_MSG_MAX 512

struct hv_err {
    char msg[HV_ERR_MSG_MAX];
    int code; /* optional errno value, 0 if none */
};

/* Format the message; always returns -1 so callers can `return hv_errf(err, ...)`.
 * `err` may be NULL (the message is then discarded). */
int hv_errf(struct hv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like hv_errf, and appends ": strerror(errno)" and records errno in err->code. */
int hv_errf_errno(struct hv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepend "<prefix>: " to an existing message ("vmm: load kernel: bad magic"). Returns -1. */
int hv_err_prefix(struct hv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void hv_err_clear(struct hv_err *err);
