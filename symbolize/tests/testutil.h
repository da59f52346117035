/* Helpers shared by the symbols and report tests: fixture paths, temp dirs, running tools. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf_symbols.h"

/* FIXTURE_OUT "/" name, in a static buffer per call slot (two slots alternate). */
const char *fixture(const char *name);

/* mkdtemp under $TMPDIR; returns a malloc'ed path. */
char *make_temp_dir(void);
/* rm -rf `dir` and free it. */
void remove_temp_dir(char *dir);

/* Run a shell command; return its stdout (malloc'ed, NUL-terminated) and exit status. */
char *run_capture(const char *cmd, int *status);
/* The same with the command made by printf from fmt (at most 16 KiB). */
char *run_capturef(int *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Build-id of a file as `readelf -n` reports it (hex), into out; returns its length or 0. */
size_t readelf_build_id(const char *path, char *out, size_t cap);

/* Address of symbol `name` per `nm` (independent of libelf), 0 if absent. */
uint64_t nm_address(const char *path, const char *name);

/* Whole file into memory. */
void *read_file(const char *path, size_t *len);
