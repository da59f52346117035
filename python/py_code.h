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
bool py_code_read(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                  struct py_code_info *out);

/* What tells one code object from another at the same address (the allocator reuses a freed
 * one's): the addresses of its qualified name, file and location table objects. */
bool py_code_fingerprint(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                         uint64_t fp[3]);

/* The str object at va into out as UTF-8 (len bytes at most, NUL-terminated; control bytes as
 * '?', cut at a character boundary). False when it is not a compact str. */
bool py_str_read(const struct py_layout *l, const struct rt_mem *m, uint64_t va, char *out,
                 size_t len);

/* The line of the instruction at code unit `index` of a code object whose first line is
 * `first`, from its location table `table` (n bytes); -1 when the table gives it none (or is
 * malformed). */
int32_t py_line_of(const uint8_t *table, size_t n, int32_t first, uint64_t index);

/* The location table of the code object at `code` (at most max bytes), allocated (the caller
 * frees it), its length in *len; NULL when it cannot be read or is longer. */
uint8_t *py_code_linetable(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                           size_t max, size_t *len);

/* The address of a code object's bytecode (co_code_adaptive): a frame's instruction pointer
 * less it, halved, is the code unit its location table is indexed by. */
static inline uint64_t py_code_bytecode(const struct py_runtime *rt, uint64_t code)
{
    return code + rt->l->code_adaptive;
}

/* The line a frame is at: its instruction pointer `instr` in code object `code`. -1 unknown. */
int32_t py_code_line(const struct py_runtime *rt, const struct rt_mem *m, uint64_t code,
                     uint64_t instr);
