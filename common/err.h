/* Errors as values: a function that can fail takes a `struct hv_err *` and returns -1 (or NULL)
 * after filling in one human-readable line and the kind of failure. Callers add context with
 * hv_err_prefix() (the kind stays), branch on hv_err_kind() where the kind decides what to do
 * (an allocation failure is never "just a bad candidate file"), and the CLI prints the final
 * line once. Nothing below the CLI calls exit(). The kinds follow drgn's error codes and
 * Firecracker's typed errors: few, and each one something a caller acts on. */
#pragma once

#include <stdarg.h>

#define HV_ERR_MSG_MAX 512

enum hv_err_kind {
    HV_ERR_OTHER = 0,   /* none of the below */
    HV_ERR_NO_MEMORY,   /* an allocation failed */
    HV_ERR_OS,          /* a system call failed: `code` holds its errno */
    HV_ERR_USAGE,       /* a value the user gave is not valid (an option, a spec, a path's kind) */
    HV_ERR_CORRUPT,     /* a file or record is malformed or cut short */
    HV_ERR_UNSUPPORTED, /* well-formed, but not something hvprof handles */
    HV_ERR_LIMIT,       /* a bound that keeps hostile input in check was reached */
    HV_ERR_GUEST,       /* the guest's memory does not (yet) hold what was looked for */
    HV_ERR_PLATFORM,    /* the host cannot do it: no KVM, a capability missing */
};
#define HV_ERR_KINDS (HV_ERR_PLATFORM + 1)

struct hv_err {
    char msg[HV_ERR_MSG_MAX];
    int code;              /* errno value for HV_ERR_OS (and NO_MEMORY from a call), else 0 */
    enum hv_err_kind kind; /* what failed; HV_ERR_OTHER when the origin did not say */
};

/* Format the message (kind HV_ERR_OTHER); always returns -1 so callers can
 * `return hv_errf(err, ...)`. `err` may be NULL (the message is then discarded). */
int hv_errf(struct hv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same with its kind. */
int hv_errk(struct hv_err *err, enum hv_err_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like hv_errf, and appends ": strerror(errno)" and records errno in err->code; the kind is
 * HV_ERR_OS (HV_ERR_NO_MEMORY for ENOMEM). */
int hv_errf_errno(struct hv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepend "<prefix>: " to an existing message ("vmm: load kernel: bad magic"). Returns -1. */
int hv_err_prefix(struct hv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void hv_err_clear(struct hv_err *err);

/* The kind of a filled-in error (HV_ERR_OTHER for NULL). */
static inline enum hv_err_kind hv_err_kind(const struct hv_err *err)
{
    return err ? err->kind : HV_ERR_OTHER;
}

/* Re-kind a filled-in error (an errno error that is the platform's, say); returns -1. */
static inline int hv_err_as(struct hv_err *err, enum hv_err_kind kind)
{
    if (err)
        err->kind = kind;
    return -1;
}

/* Its name for messages and tests: "no-memory", "os", "usage", "corrupt", ... */
const char *hv_err_kind_name(enum hv_err_kind kind);
