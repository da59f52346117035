/* BTF, the kernel's own type information (Documentation/bpf/btf.rst; include/uapi/linux/btf.h),
 * which distribution kernels carry with CONFIG_DEBUG_INFO_BTF between __start_BTF and
 * __stop_BTF. hvprof reads the offsets of the kernel structures it needs (task_struct's pid,
 * tgid, comm, mm, flags, ...) from it instead of hard-coding any layout, so a kernel built with
 * another configuration, compiler or randomized layout is read right.
 *
 * The section is the guest's: lx_btf_load() copies it (so the guest cannot change it under the
 * reader), checks the header and walks every type record once with its size checked against
 * the section, and refuses unknown kinds. Lookups are bounded (anonymous-member depth,
 * modifier chains, and the members examined in all: LX_BTF_MAX_WORK). A forged BTF gives wrong
 * offsets or none, never a crash, unbounded memory or unbounded time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define LX_BTF_MAX_BYTES (64u << 20) /* vmlinux BTF is ~5 MiB */
/* Members examined by one lookup at most, through every anonymous member it searches: a real
 * task_struct lookup examines a few hundred (6.1: ~250 members, a dozen anonymous ones). */
#define LX_BTF_MAX_WORK (1u << 16)

struct lx_btf {
    uint8_t *data; /* the copied section */
    size_t len;
    const uint8_t *types;
    uint32_t types_len;
    const char *strs;
    uint32_t strs_len;
    uint32_t *type_off; /* offset of type id i (1-based; [0] unused) in types */
    uint32_t ntypes;    /* highest type id */
};

/* Copy and index a BTF blob. 0, or -1 with err (bad magic/version/header, sections outside the
 * blob, a type record running past its section, an unknown kind, a name outside the strings). */
int lx_btf_load(struct lx_btf *b, const void *data, size_t len, struct hv_err *err);
void lx_btf_free(struct lx_btf *b);

/* The id of the struct (or union) named `name`, or 0. */
uint32_t lx_btf_find_struct(const struct lx_btf *b, const char *name);

/* The byte offset of `path` ("pid", "thread.sp", members of anonymous structs and unions found
 * as if they were direct members) in the struct with id `sid`, and the size of that member in
 * bytes. False if a name is missing, the member is a bitfield, or a component is not a struct. */
bool lx_btf_member(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t *offset,
                   uint64_t *size);
/* The same, telling in *work (if not NULL) how many members the lookup examined: at most
 * LX_BTF_MAX_WORK for the whole path, past which it gives up (false). */
bool lx_btf_member_counted(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t *offset,
                           uint64_t *size, uint64_t *work);

/* The bit offset and width of member `name` (a bitfield or not; anonymous members searched) of
 * struct `sid`. False if there is no such member or its width cannot be told. */
bool lx_btf_bitfield(const struct lx_btf *b, uint32_t sid, const char *name, uint64_t *bit_off,
                     uint32_t *bits);

/* The value of enumerator `name` (of any enum: "PG_uptodate"), false if no enum has it. */
bool lx_btf_enum_value(const struct lx_btf *b, const char *name, int64_t *value);

/* Size in bytes of type `id` after typedefs and modifiers (pointers 8, arrays nelems x element);
 * false if it has none (void, functions) or a chain is too long. */
bool lx_btf_type_size(const struct lx_btf *b, uint32_t id, uint64_t *size);
