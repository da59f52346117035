/* Running a command as the tests of the command line do: its standard output and error
 * together into a buffer, its exit status back. */
#pragma once

#include <stdarg.h>
#include <stddef.h>

/* `cmd` through the shell, "2>&1" added; up to cap - 1 bytes of what it printed into out
 * (NUL-terminated). Its exit status, or -1 when it could not run or did not exit; when not 0,
 * the command and what it printed also go to stderr, for a failing test's log. */
int hv_run_cmd(const char *cmd, char *out, size_t cap);

/* A shell command from a format: system()'s exit status, -1 when it did not exit. */
int hv_shf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
