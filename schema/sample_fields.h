/* The sample record's fields: the one table of them (docs/fxt-samples.md, "Sample record"),
 * which the encoder (schema/encode.c), the decoder (schema/decode.c), `hvprof dump` and the
 * report's loader (report/fxt_load.c, through the decoder's view and the names) all read. A new
 * field is one row here, a member of struct hvfxt_sample (schema/encode.h) and of struct
 * hvfxt_sample_view (schema/decode.h), and whatever its meaning needs where it is used.
 *
 * RFC-0274 fields first (bits 0..5), then hvprof's extensions in the RFC's reserved bits
 * (6..17; bit 15, python_stack, is only read: recordings before runtime_stack wrote it). Present
 * fields follow the flags word in bit order: a WORD is one u64, a STACK a count word and that many
 * return addresses, the WALK word one u64 that the encoder may set itself (a stack cut to fit the
 * record says so there).
 *
 *   X(NAME, bit, member, stack count member or _, shape, wire name, dump label, dump format) */
#pragma once

#define HVFXT_SAMPLE_FIELDS(X)                                                                     \
    X(CONTINUATION, 0, continuation, _, WORD, "continuation", "continuation", DEC)                 \
    X(CONTINUATION_COMPLETION, 1, completion, _, WORD, "continuation_completion", "completes",     \
      DEC)                                                                                         \
    X(PID, 2, pid, _, WORD, "pid", "pid", HEX)                                                     \
    X(TID, 3, tid, _, WORD, "tid", "tid", HEX)                                                     \
    X(BOOT_TS, 4, ts, _, WORD, "boot_ts", "ts", DEC)                                               \
    X(USER_STACK, 5, user_stack, n_user, STACK, "user_fp_call_stack", "ustack", FRAMES)            \
    X(VCPU, 6, vcpu, _, WORD, "vcpu", "vcpu", DEC)                                                 \
    X(CPL, 7, cpl, _, WORD, "cpl", "cpl", DEC)                                                     \
    X(PC, 8, pc, _, WORD, "pc", "pc", HEX)                                                         \
    X(KERNEL_STACK, 9, kernel_stack, n_kernel, STACK, "kernel_call_stack", "kstack", FRAMES)       \
    X(WALK, 10, walk, _, WALK, "walk", "walk", WALKFMT)                                            \
    X(EXIT, 11, exit_site, _, WORD, "exit", "exit", HEX)                                           \
    X(EXIT_NS, 12, exit_ns, _, WORD, "exit_ns", "exit_ns", DEC)                                    \
    X(OFF_CPU_NS, 13, off_cpu_ns, _, WORD, "off_cpu_ns", "off_cpu_ns", DEC)                        \
    X(TASK_STATE, 14, task_state, _, WORD, "task_state", "state", DEC)                             \
    X(PYTHON_STACK, 15, py_stack, n_py, STACK, "python_stack", "pystack", FRAMES)                  \
    X(RUNTIME_STACK, 16, rt_stack, n_rt, STACK, "runtime_stack", "rtstack", FRAMES)                \
    X(CGROUP, 17, cgroup, _, WORD, "cgroup", "cgroup", HEX)

/* fields_bitflags: HVFXT_SF_<NAME> = 1 << bit. */
#define HVFXT_SF_ENUM_(NAME, bit, member, count, shape, wire, label, fmt)                          \
    HVFXT_SF_##NAME = 1u << (bit),
enum hvfxt_sample_field { HVFXT_SAMPLE_FIELDS(HVFXT_SF_ENUM_) };
#undef HVFXT_SF_ENUM_

/* clang-format off */
/* Every bit the table defines; any other bit set: the reader rejects the record. */
#define HVFXT_SF_KNOWN_(NAME, bit, member, count, shape, wire, label, fmt) | (1u << (bit))
#define HVFXT_SF_KNOWN (0u HVFXT_SAMPLE_FIELDS(HVFXT_SF_KNOWN_))

/* How many fields there are (the record's fixed part is 2 + this many words at most). */
#define HVFXT_SF_COUNT_(NAME, bit, member, count, shape, wire, label, fmt) +1
#define HVFXT_SF_COUNT (0 HVFXT_SAMPLE_FIELDS(HVFXT_SF_COUNT_))

/* clang-format on */

/* The table as data, for code that walks every field (the decoder's order, dump's labels). */
enum hvfxt_sf_shape { HVFXT_SF_SHAPE_WORD, HVFXT_SF_SHAPE_STACK, HVFXT_SF_SHAPE_WALK };
enum hvfxt_sf_format {
    HVFXT_SF_FMT_DEC,
    HVFXT_SF_FMT_HEX,
    HVFXT_SF_FMT_FRAMES,
    HVFXT_SF_FMT_WALKFMT
};
struct hvfxt_sample_field_info {
    unsigned bit;
    enum hvfxt_sf_shape shape;
    const char *wire;  /* its name in the RFC and docs/fxt-samples.md */
    const char *label; /* hvprof dump's name for it */
    enum hvfxt_sf_format format;
};
extern const struct hvfxt_sample_field_info hvfxt_sample_fields[];
