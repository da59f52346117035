#include "common/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void set(struct hv_err *err, enum hv_err_kind kind, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    err->code = 0;
    err->kind = kind;
}

int hv_errf(struct hv_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    set(err, HV_ERR_OTHER, fmt, ap);
    va_end(ap);
    return -1;
}

int hv_errk(struct hv_err *err, enum hv_err_kind kind, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    set(err, kind, fmt, ap);
    va_end(ap);
    return -1;
}

int hv_errf_errno(struct hv_err *err, const char *fmt, ...)
{
    int saved = errno;
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof(err->msg))
        snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(saved));
    err->code = saved;
    err->kind = saved == ENOMEM ? HV_ERR_NO_MEMORY : HV_ERR_OS;
    errno = saved;
    return -1;
}

int hv_err_prefix(struct hv_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prefix[HV_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    char old[HV_ERR_MSG_MAX];
    memcpy(old, err->msg, sizeof(old));
    /* Truncation of an over-long message is acceptable; keep the prefix. */
    size_t n = strnlen(prefix, sizeof(err->msg) - 1);
    memcpy(err->msg, prefix, n);
    size_t rest = sizeof(err->msg) - n;
    if (rest > 2) {
        err->msg[n] = ':';
        err->msg[n + 1] = ' ';
        size_t m = strnlen(old, rest - 3);
        memcpy(err->msg + n + 2, old, m);
        err->msg[n + 2 + m] = '\0';
    } else {
        err->msg[n] = '\0';
    }
    return -1;
}

void hv_err_clear(struct hv_err *err)
{
    if (err) {
        err->msg[0] = '\0';
        err->code = 0;
        err->kind = HV_ERR_OTHER;
    }
}

const char *hv_err_kind_name(enum hv_err_kind kind)
{
    static const char *const names[HV_ERR_KINDS] = {
        [HV_ERR_OTHER] = "other",
        [HV_ERR_NO_MEMORY] = "no-memory",
        [HV_ERR_OS] = "os",
        [HV_ERR_USAGE] = "usage",
        [HV_ERR_CORRUPT] = "corrupt",
        [HV_ERR_UNSUPPORTED] = "unsupported",
        [HV_ERR_LIMIT] = "limit",
        [HV_ERR_GUEST] = "guest",
        [HV_ERR_PLATFORM] = "platform",
    };
    return (unsigned)kind < HV_ERR_KINDS ? names[kind] : "other";
}
