/* A CPython code object read from outside (docs/python.md): its qualified name and file (str
 * objects, compact as the interpreter makes them for code), its first line, and the line of an
 * instruction from its location table (co_linetable: the format of CPython 3.11 and later,
 * Objects/locations.md). Every length bounded, every name made printable. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/py_frames.h"

#define PY_NAME_MAX      256        /* bytes of a qualified name kept (UTF-8), cut beyond */
#define PY_FILE_MAX      512        /* bytes of a file name kept */
#define PY_LINETABLE_MAX (1u << 20) /* a location table read at most */

struct py_code_info {
    char qualname[PY_NAME_MAX];
    char filename[PY_FILE_MAX];
    int32_t firstlineno;
};

/* The code object at `code`. False when it does not read as one (a string that is no compact
 * str, a first line out of range). */
bool py_code_read(const struct py_runtime *rt, const struct py_mem *m, uint64_t code,
                  struct py_code_info *out);

/* The str object at va into out as UTF-8 (len bytes at most, NUL-terminated; control bytes as
 * '?', cut at a character boundary). False when it is not a compact str. */
bool py_str_read(const struct py_layout *l, const struct py_mem *m, uint64_t va, char *out,
                 size_t len);

/* The line of the instruction at code unit `index` of a code object whose first line is
 * `first`, from its location table `table` (n bytes); -1 when the table gives it none (or is
 * malformed). */
int32_t py_line_of(const uint8_t *table, size_t n, int32_t first, uint64_t index);

/* The line a frame is at: its instruction pointer `instr` in code object `code`. -1 unknown. */
int32_t py_code_line(const struct py_runtime *rt, const struct py_mem *m, uint64_t code,
                     uint64_t instr);
