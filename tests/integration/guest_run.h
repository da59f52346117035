/* Helpers for integration tests that boot the built-in test guest (tests/guest) under the real
 * `hvprof run` and check its console. */
#pragma once

#include "tests/common/need_kvm.h"

#include <stdbool.h>
#include <stddef.h>

struct guest_run {
    int status;    /* hvprof's exit status (the guest's debug-exit status), -1 if it died */
    char *console; /* NUL-terminated console output (malloc'd) */
    size_t console_len;
    char console_path[256];
};

/* Path of a built artifact under HVPROF_BINARY_DIR (default: the build directory this was
 * compiled in), e.g. "cli/hvprof"; the hvprof binary can be overridden with HVPROF_EXE.
 * Returns a static buffer. */
const char *guest_build_path(const char *rel);

/* True when /dev/kvm can be opened (tests skip otherwise). */

/* Boot the test guest: hvprof run --kernel ... --initrd ... --vcpus N --mem 256M
 * --cmdline CMDLINE --console FILE --timeout 240s. Returns 0 when hvprof ran and exited (any
 * status), -1 when it could not be started or the console could not be read. */
int guest_run(struct guest_run *r, unsigned vcpus, const char *cmdline);
/* The same; `echo` = print the command and the console to stderr (tests: yes, benchmarks: no). */
int guest_run_echo(struct guest_run *r, unsigned vcpus, const char *cmdline, bool echo);

void guest_run_free(struct guest_run *r);

/* The whole file, NUL-terminated (malloc'd); *len (may be NULL) gets its length. NULL if it
 * cannot be read. */
char *guest_read_file(const char *path, size_t *len);

/* The console line starting with `prefix` (first match), copied into buf; NULL if none. */
const char *guest_line(const struct guest_run *r, const char *prefix, char *buf, size_t len);

/* How many console lines start with `prefix`. */
int guest_count_lines(const struct guest_run *r, const char *prefix);

/* Integer value of `key=` within `line`, or -1. */
long guest_field(const char *line, const char *key);
