/* HotSpot's own description of itself, read from outside the JVM (docs/java.md): the four tables
 * the Serviceability Agent reads (hotspot/share/runtime/vmStructs.{hpp,cpp} of OpenJDK).
 *
 *   gHotSpotVMStructs        the fields: a type's name, the field's name, its type as a string,
 *                            static or not, its offset in the type (or a static's address);
 *   gHotSpotVMTypes          the types: name, superclass, oop/integer/unsigned flags, size;
 *   gHotSpotVMIntConstants   named int32 constants; gHotSpotVMLongConstants named uint64 ones.
 *
 * Each is a pointer variable to an array ended by an entry whose name is NULL. The layout of an
 * entry is itself exported (gHotSpotVMStructEntryTypeNameOffset, ..., ...ArrayStride), so a
 * reader needs no JDK's headers: that is what makes one reader serve every JDK version.
 *
 * Everything here is read from a process hvprof does not trust: every count, stride, offset and
 * string is bounded (HS_MAX_*), and a table that breaks a bound is refused with why. Runs on the
 * drain thread (it allocates), once per JVM. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/rt_mem.h"

/* The exported symbols, in the order of hs_vmstructs_syms.addr. */
#define HS_SYMS(X)                                                                                 \
    X(STRUCTS, "gHotSpotVMStructs")                                                                \
    X(S_TYPE, "gHotSpotVMStructEntryTypeNameOffset")                                               \
    X(S_FIELD, "gHotSpotVMStructEntryFieldNameOffset")                                             \
    X(S_TYPESTR, "gHotSpotVMStructEntryTypeStringOffset")                                          \
    X(S_STATIC, "gHotSpotVMStructEntryIsStaticOffset")                                             \
    X(S_OFFSET, "gHotSpotVMStructEntryOffsetOffset")                                               \
    X(S_ADDRESS, "gHotSpotVMStructEntryAddressOffset")                                             \
    X(S_STRIDE, "gHotSpotVMStructEntryArrayStride")                                                \
    X(TYPES, "gHotSpotVMTypes")                                                                    \
    X(T_NAME, "gHotSpotVMTypeEntryTypeNameOffset")                                                 \
    X(T_SUPER, "gHotSpotVMTypeEntrySuperclassNameOffset")                                          \
    X(T_OOP, "gHotSpotVMTypeEntryIsOopTypeOffset")                                                 \
    X(T_INT, "gHotSpotVMTypeEntryIsIntegerTypeOffset")                                             \
    X(T_UNSIGNED, "gHotSpotVMTypeEntryIsUnsignedOffset")                                           \
    X(T_SIZE, "gHotSpotVMTypeEntrySizeOffset")                                                     \
    X(T_STRIDE, "gHotSpotVMTypeEntryArrayStride")                                                  \
    X(INTS, "gHotSpotVMIntConstants")                                                              \
    X(I_NAME, "gHotSpotVMIntConstantEntryNameOffset")                                              \
    X(I_VALUE, "gHotSpotVMIntConstantEntryValueOffset")                                            \
    X(I_STRIDE, "gHotSpotVMIntConstantEntryArrayStride")                                           \
    X(LONGS, "gHotSpotVMLongConstants")                                                            \
    X(L_NAME, "gHotSpotVMLongConstantEntryNameOffset")                                             \
    X(L_VALUE, "gHotSpotVMLongConstantEntryValueOffset")                                           \
    X(L_STRIDE, "gHotSpotVMLongConstantEntryArrayStride")

enum hs_sym {
#define HS_SYM_ENUM_(id, name) HS_SYM_##id,
    HS_SYMS(HS_SYM_ENUM_)
#undef HS_SYM_ENUM_
        HS_SYM_COUNT
};

/* The symbols' names, indexed by enum hs_sym. */
extern const char *const hs_sym_names[HS_SYM_COUNT];

/* Bounds on what a JVM's tables may hold. Debian 12's OpenJDK 17 has 788 fields, 768 types,
 * 398 int and 86 long constants, 43 KB of names (test_java_live); these leave room for
 * later JDKs and for builds with more of the Serviceability Agent's entries. */
#define HS_MAX_ENTRIES 16384 /* per table */
#define HS_MAX_NAME    160   /* bytes of a name, its NUL included ("CompiledMethod::_method") */
#define HS_MAX_STRIDE  256   /* bytes of an entry */
#define HS_MAX_POOL    (4u << 20)

struct hs_field {
    uint32_t type, name, type_string; /* offsets in the pool; type_string 0 when absent */
    bool is_static;
    uint64_t value; /* its offset in the type, or a static's address */
};

struct hs_type {
    uint32_t name, super; /* super 0 when none */
    bool is_oop, is_integer, is_unsigned;
    uint64_t size;
};

struct hs_constant {
    uint32_t name;
    uint64_t value; /* an int constant sign-extended */
};

struct hs_vmstructs {
    struct hs_field *fields;
    struct hs_type *types;
    struct hs_constant *ints, *longs;
    size_t nfields, ntypes, nints, nlongs;
    char *pool; /* every name, NUL-terminated; offset 0 is the empty string */
    size_t pool_len, pool_cap;
};

/* Read the four tables of the JVM whose symbols are at addr[] (their run-time addresses) through
 * m. -1 with err (HV_ERR_GUEST: not readable yet; HV_ERR_CORRUPT / HV_ERR_LIMIT: a table that
 * is no HotSpot's or breaks a bound; HV_ERR_NO_MEMORY). */
int hs_vmstructs_read(struct hs_vmstructs *vs, const struct rt_mem *m,
                      const uint64_t addr[HS_SYM_COUNT], struct hv_err *err);
void hs_vmstructs_free(struct hs_vmstructs *vs);

static inline const char *hs_str(const struct hs_vmstructs *vs, uint32_t at)
{
    return vs->pool + at;
}

/* A non-static field's offset in `type` / a static field's address. */
bool hs_offset(const struct hs_vmstructs *vs, const char *type, const char *field, uint64_t *out);
bool hs_static(const struct hs_vmstructs *vs, const char *type, const char *field, uint64_t *out);
/* A field's type as its table writes it ("u2", "Method*"), NULL if no such field. */
const char *hs_field_type(const struct hs_vmstructs *vs, const char *type, const char *field);
/* A type's size in bytes. */
bool hs_type_size(const struct hs_vmstructs *vs, const char *type, uint64_t *out);
/* A named int / long constant. */
bool hs_int_constant(const struct hs_vmstructs *vs, const char *name, int64_t *out);
bool hs_long_constant(const struct hs_vmstructs *vs, const char *name, uint64_t *out);
